"""RoPE against PyTorch, written from Su et al. (2021), RoFormer, eq. 34:
pairs of coordinates turn by m * theta_i, theta_i = base^(-2i/d).
INTERLEAVED is computed as Meta's Llama does it, with complex numbers:
(x[2i] + j x[2i+1]) * e^(j m theta_i). HALVES is GPT-NeoX's rotate_half:
x cos + rotate_half(x) sin with the angles repeated over the two halves."""

import torch
from parity import check, check_grads, dump, finish, leaf


def angles(d, positions, base):
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2)
    return torch.outer(positions.to(torch.float64), theta)  # (T, d/2)


def rope_complex(x, offset, base):
    t, d = x.shape[-2], x.shape[-1]
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    a = angles(d, torch.arange(offset, offset + t), base)
    rotated = z * torch.polar(torch.ones_like(a), a)
    return torch.view_as_real(rotated).reshape(x.shape)


def rope_rotate_half(x, offset, base):
    t, d = x.shape[-2], x.shape[-1]
    a = angles(d, torch.arange(offset, offset + t), base)
    a = torch.cat([a, a], dim=-1)  # (T, d)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * torch.cos(a) + torch.cat([-x2, x1], dim=-1) * torch.sin(a)


def rotate(x, offset, options):
    """The formula the attention parity scripts apply to q and k (see
    framework/testing/attention_parity.py): x (..., T, D) at positions
    offset, offset + 1, ..., with options {"base": ..., "pairing": ...}."""
    base = float(options.get("base", 10000.0))
    if options.get("pairing", "INTERLEAVED") == "HALVES":
        return rope_rotate_half(x, offset, base)
    return rope_complex(x, offset, base)


def main():
    cases = [("INTERLEAVED", 10000.0, 0, "2,2,5,8"), ("INTERLEAVED", 100.0, 7, "1,3,4,6"),
             ("HALVES", 10000.0, 3, "2,2,5,8"), ("INTERLEAVED", 10000.0, 1000, "1,2,3,16"),
             ("HALVES", 500000.0, 11, "2,6,4")]  # a rank-3 input, as MLA's shared rope key
    for pairing, base, offset, shape in cases:
        d = dump(kind="position", plugin="rope", hook="rotate",
                 options=f"base: {base} pairing: {pairing}", d_model=16, num_heads=2,
                 offset=offset, shape=shape)
        print(pairing, "base", base, "offset", offset, "shape", shape)
        x = leaf(d["x"])
        y = rotate(x, offset, {"base": base, "pairing": pairing})
        check("y", d["y"], y)
        check_grads(d, y, {"dx": x})
    finish()


if __name__ == "__main__":
    main()
