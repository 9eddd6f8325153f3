"""Linear attention against PyTorch, Katharopoulos et al. (2020), eq. 16-20,
written as the paper's recurrence one token at a time:
  S_i = S_{i-1} + phi(k_i) v_i^T,  Z_i = Z_{i-1} + phi(k_i)
  y_i = phi(q_i)^T S_i / (phi(q_i)^T Z_i + eps)   (normalize)
phi = elu(x) + 1 (the paper), relu or the identity; y = concat_h(y) W_o."""

import torch

from attention_parity import check_mixer, linear, merge_heads, split_heads

EPS = 1e-6


def phi(x, name):
    if name == "RELU":
        return torch.relu(x)
    if name == "IDENTITY":
        return x
    return torch.nn.functional.elu(x) + 1.0


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    feature_map = options.get("feature_map", "ELU_PLUS_ONE")
    normalize = options.get("normalize", "true") == "true"
    q = phi(split_heads(linear(x, p, "w_q"), num_heads), feature_map)  # (B, H, T, hs)
    k = phi(split_heads(linear(x, p, "w_k"), num_heads), feature_map)  # (B, H, T, hs)
    v = split_heads(linear(x, p, "w_v"), num_heads)                    # (B, H, T, hs)
    b, h, t, hs = q.shape
    state = torch.zeros(b, h, hs, hs, dtype=q.dtype)  # S
    norm = torch.zeros(b, h, hs, dtype=q.dtype)       # Z
    outputs = []
    for i in range(t):
        state = state + k[:, :, i, :, None] * v[:, :, i, None, :]
        norm = norm + k[:, :, i]
        y = torch.einsum("bhd,bhde->bhe", q[:, :, i], state)
        if normalize:
            y = y / ((q[:, :, i] * norm).sum(-1, keepdim=True) + EPS)
        outputs.append(y)
    return linear(merge_heads(torch.stack(outputs, dim=2)), p, "w_o")


if __name__ == "__main__":
    check_mixer("linear_attention", [
        {"layout_options": "chunk_size: 2"},
        {"layout_options": "feature_map: RELU chunk_size: 3"},
        {"layout_options": "feature_map: IDENTITY normalize: false chunk_size: 2"},
    ])
