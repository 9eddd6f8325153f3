"""Sinusoidal positions against PyTorch, Vaswani et al. (2017), section 3.5:
PE(pos, 2i) = sin(pos / base^(2i / C)), PE(pos, 2i + 1) = cos(pos / base^(2i / C)),
added to the embeddings: y = x + PE[offset : offset + T]."""

import torch
from parity import check, check_grads, dump, finish, leaf


def table(positions, width, base):  # (T) -> (T, C)
    i = torch.arange(0, width, 2, dtype=torch.float64)  # 2i
    angle = positions.to(torch.float64)[:, None] / base ** (i / width)[None, :]  # (T, C/2)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).reshape(len(positions), width)


for base, offset, width, shape in [(10000.0, 0, 8, "2,4,8"), (100.0, 5, 6, "1,3,6"),
                                   (10000.0, 37, 16, "2,3,16")]:
    d = dump(kind="position", plugin="sinusoidal", hook="embed", options=f"base: {base}",
             d_model=width, num_heads=2, offset=offset, shape=shape)
    print("base", base, "offset", offset, "shape", shape)
    x = leaf(d["x"])
    y = x + table(torch.arange(offset, offset + x.shape[1]), width, base)
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x})
finish()
