"""xPos against PyTorch, from Sun et al. (2022), "A Length-Extrapolatable
Transformer", sec. 3: rotary pairs (x[2i], x[2i+1]) as the paper's
rotate_every_two, with the per-dimension scale
zeta = (arange(0, d, 2) / d + gamma) / (1 + gamma) raised to n / scale_base
for queries and to -m / scale_base for keys (no centring: positions are
absolute, as a KV cache needs)."""

import torch
from parity import check, check_grads, dump, finish, leaf


def rotate_every_two(x):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def xpos(x, offset, sign, base=10000.0, scale_base=512.0, gamma=0.4):
    t, d = x.shape[-2], x.shape[-1]
    pos = torch.arange(offset, offset + t, dtype=torch.float64)[:, None]  # (T, 1)
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2)
    angle = (pos * inv_freq).repeat_interleave(2, dim=-1)  # (T, d)
    zeta = (torch.arange(0, d, 2, dtype=torch.float64) / d + gamma) / (1 + gamma)
    scale = (zeta ** (sign * pos / scale_base)).repeat_interleave(2, dim=-1)  # (T, d)
    return (x * torch.cos(angle) + rotate_every_two(x) * torch.sin(angle)) * scale


def main():
    cases = [(0, "2,2,5,8", 512.0, 0.4), (37, "1,2,4,8", 16.0, 0.4), (300, "1,1,3,16", 64.0, 0.8)]
    for offset, shape, scale_base, gamma in cases:
        d_model = 2 * int(shape.split(",")[-1])
        for hook, sign in (("rotate_query", 1.0), ("rotate_key", -1.0)):
            d = dump(kind="position", plugin="xpos", hook=hook, causal=1, max_seq_len=64,
                     options=f"scale_base: {scale_base} gamma: {gamma}", d_model=d_model,
                     num_heads=2, offset=offset, shape=shape)
            print(hook, "offset", offset, "shape", shape, "scale_base", scale_base)
            x = leaf(d["x"])
            y = xpos(x, offset, sign, scale_base=scale_base, gamma=gamma)
            check("y", d["y"], y)
            check_grads(d, y, {"dx": x})
    finish()


if __name__ == "__main__":
    main()
