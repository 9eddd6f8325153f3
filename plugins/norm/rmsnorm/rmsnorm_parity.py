"""RMSNorm against PyTorch, from Zhang & Sennrich (2019), eq. 4:
y = x / RMS(x) * g with RMS(x) = sqrt(mean(x^2) + eps)."""

import torch
from parity import check, check_grads, dump, finish, leaf

for eps, shape in [(1e-6, "3,5,8"), (1e-2, "4,8")]:
    d = dump(kind="normalization", plugin="rmsnorm", options=f"eps: {eps}", d_model=8, shape=shape)
    x, g = leaf(d["x"]), leaf(d["param/weight"])
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * g
    print(f"eps {eps}, x {shape}")
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x, "grad/weight": g})
finish()
