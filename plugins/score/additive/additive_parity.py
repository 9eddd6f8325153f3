"""Additive score against PyTorch, Bahdanau, Cho & Bengio (2015), eq. 6 /
appendix A.1.2: logit(q, k) = v^T tanh(W_q q + W_k k), one (W_q, W_k, v) shared
by the heads."""

import torch

from attention_parity import check_score


def logits(q, k, p, options):  # (B, H, T, d), (B, H, S, d) -> (B, H, T, S)
    wq = q @ p["w_q.weight"].T  # (B, H, T, D)
    wk = k @ p["w_k.weight"].T  # (B, H, S, D)
    return torch.tanh(wq[:, :, :, None, :] + wk[:, :, None, :, :]) @ p["v"]


if __name__ == "__main__":
    check_score("additive", [{"score_options": "hidden_size: 5"}])
