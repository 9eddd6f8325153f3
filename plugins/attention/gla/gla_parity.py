"""Gated linear attention against PyTorch, Yang et al. (2024), eq. 3-4
(the recurrent form, one token at a time, gates applied in linear space):
  alpha_t = sigmoid(x_t W_1 W_2 + b_2) ** (1 / normalizer)
  S_t = diag(alpha_t) S_{t-1} + k_t^T v_t,   o_t = (q_t / sqrt(d_k)) S_t
  y = concat_h(RMSNorm(o_h) * gamma * silu(x W_g)_h) W_o   (eps 1e-5)."""

import torch

from attention_parity import check_mixer, linear, merge_heads, split_heads

EPS = 1e-5


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    normalizer = float(options.get("gate_logit_normalizer", "16"))
    q = split_heads(linear(x, p, "w_q"), num_heads)  # (B, H, T, hs)
    k = split_heads(linear(x, p, "w_k"), num_heads)
    v = split_heads(linear(x, p, "w_v"), num_heads)
    gate_logits = linear(linear(x, p, "gate_1"), p, "gate_2")
    alpha = split_heads(torch.sigmoid(gate_logits) ** (1.0 / normalizer), num_heads)  # (B, H, T, hs)
    b, h, t, hs = q.shape
    state = torch.zeros(b, h, hs, hs, dtype=q.dtype)
    outputs = []
    for i in range(t):
        state = alpha[:, :, i, :, None] * state + k[:, :, i, :, None] * v[:, :, i, None, :]
        outputs.append(torch.einsum("bhd,bhde->bhe", q[:, :, i] / hs ** 0.5, state))
    o = torch.stack(outputs, dim=2)  # (B, H, T, hs)
    o = o * torch.rsqrt((o * o).mean(-1, keepdim=True) + EPS) * p["head_norm_scale"]
    o = o * torch.nn.functional.silu(split_heads(linear(x, p, "w_g"), num_heads))
    return linear(merge_heads(o), p, "w_o")


if __name__ == "__main__":
    check_mixer("gla", [
        {"layout_options": "chunk_size: 2"},
        {"layout_options": "chunk_size: 3 gate_low_rank: 4 gate_logit_normalizer: 2"},
    ])
