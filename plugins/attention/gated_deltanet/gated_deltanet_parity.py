"""Gated DeltaNet against PyTorch, Yang, Kautz & Hatamizadeh (2025), eq. 10
(the gated delta rule one token at a time, the decay applied in linear
space, in the paper's convention: S (d_v, d_k), column vectors):
  q = l2(silu(x W_q)) / sqrt(d_k),  k = l2(silu(x W_k)),  v = x W_v
  beta_t = sigmoid(x_t W_beta),  alpha_t = exp(-exp(A_log) softplus(x_t W_a + dt_bias))
  S_t = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,   o_t = S_t q_t
  y = concat_h(RMSNorm(o_h) * gamma * silu(x W_g)_h) W_o   (eps 1e-5)."""

import torch

from attention_parity import check_mixer, linear, merge_heads, split_heads

EPS = 1e-5


def l2(x):  # over the last dimension, as fla's l2norm
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    silu, softplus = torch.nn.functional.silu, torch.nn.functional.softplus
    q = l2(silu(split_heads(linear(x, p, "w_q"), num_heads)))  # (B, H, T, hs)
    k = l2(silu(split_heads(linear(x, p, "w_k"), num_heads)))
    v = split_heads(linear(x, p, "w_v"), num_heads)
    beta = torch.sigmoid(split_heads(linear(x, p, "w_beta"), num_heads))  # (B, H, T, 1)
    decay = -torch.exp(p["a_log"]) * softplus(linear(x, p, "w_a") + p["dt_bias"])  # (B, T, H)
    alpha = torch.exp(decay).transpose(1, 2)[..., None]  # (B, H, T, 1)
    b, h, t, hs = q.shape
    eye = torch.eye(hs, dtype=q.dtype)
    state = torch.zeros(b, h, hs, hs, dtype=q.dtype)  # (value, key)
    outputs = []
    for i in range(t):
        kt, vt = k[:, :, i], v[:, :, i]  # (B, H, hs)
        bt, at = beta[:, :, i, :, None], alpha[:, :, i, :, None]  # (B, H, 1, 1)
        erase = eye - bt * kt[..., :, None] * kt[..., None, :]
        state = at * state @ erase + bt * vt[..., :, None] * kt[..., None, :]
        outputs.append(torch.einsum("bhvk,bhk->bhv", state, q[:, :, i] / hs ** 0.5))
    o = torch.stack(outputs, dim=2)  # (B, H, T, hs)
    o = o * torch.rsqrt((o * o).mean(-1, keepdim=True) + EPS) * p["head_norm_scale"]
    o = o * silu(split_heads(linear(x, p, "w_g"), num_heads))
    return linear(merge_heads(o), p, "w_o")


if __name__ == "__main__":
    check_mixer("gated_deltanet", [{"layout_options": "chunk_size: 2"}, {"layout_options": "chunk_size: 3"}])
