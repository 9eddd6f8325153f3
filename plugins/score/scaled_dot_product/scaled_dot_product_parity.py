"""Scaled dot-product score against PyTorch, from Vaswani et al. (2017),
eq. 1: logits = q k^T / sqrt(d_k)."""

import math

from attention_parity import check_score


def logits(q, k, p, options):  # (B, H, T, d), (B, H, S, d) -> (B, H, T, S)
    return q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])


if __name__ == "__main__":
    check_score("scaled_dot_product")
