"""Dot-product score against PyTorch, Luong, Pham & Manning (2015), "dot"
(eq. 8): logits = q k^T, unscaled."""

from attention_parity import check_score


def logits(q, k, p, options):  # (B, H, T, d), (B, H, S, d) -> (B, H, T, S)
    return q @ k.transpose(-1, -2)


if __name__ == "__main__":
    check_score("dot_product")
