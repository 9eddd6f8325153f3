"""Multi-scale retention against PyTorch, Sun et al. (2023), eq. 5-8, as the
paper's recurrent form (eq. 6) one token at a time, with the decay in
linear space:
  gamma_h = 1 - 2^(-5-h),  S_n = gamma_h S_{n-1} + K_n^T V_n,  o_n = Q_n S_n
  K = x W_K / sqrt(d);  Y = GroupNorm(o) per head (eps 1e-6, no affine)
  out = (swish(x W_G) * Y) W_O."""

import torch

from attention_parity import check_mixer, linear, merge_heads, split_heads

EPS = 1e-6


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    q = split_heads(linear(x, p, "w_q"), num_heads)  # (B, H, T, hs)
    k = split_heads(linear(x, p, "w_k"), num_heads)
    v = split_heads(linear(x, p, "w_v"), num_heads)
    b, h, t, hs = q.shape
    k = k / hs ** 0.5
    gamma = 1.0 - 2.0 ** (-5.0 - torch.arange(h, dtype=q.dtype))  # (H)
    state = torch.zeros(b, h, hs, hs, dtype=q.dtype)
    outputs = []
    for n in range(t):
        state = gamma[None, :, None, None] * state + k[:, :, n, :, None] * v[:, :, n, None, :]
        outputs.append(torch.einsum("bhd,bhde->bhe", q[:, :, n], state))
    o = torch.stack(outputs, dim=2)  # (B, H, T, hs)
    o = torch.nn.functional.layer_norm(o, (hs,), eps=EPS)
    o = torch.nn.functional.silu(split_heads(linear(x, p, "w_g"), num_heads)) * o
    return linear(merge_heads(o), p, "w_o")


if __name__ == "__main__":
    check_mixer("retnet", [{"layout_options": "chunk_size: 2"}, {"layout_options": "chunk_size: 3"}])
