"""LayerNorm against PyTorch, Ba, Kiros & Hinton (2016), eqs. 3-4, over the
model width: y = (x - mu) / sqrt(sigma^2 + eps) * g + b, sigma^2 the biased
variance; b only with options.bias."""

import torch
from parity import check, check_grads, dump, finish, leaf

for eps, bias, shape in [(1e-5, True, "3,5,8"), (1e-2, False, "4,8")]:
    d = dump(kind="normalization", plugin="layernorm",
             options=f"eps: {eps} bias: {str(bias).lower()}", d_model=8, shape=shape)
    print(f"eps {eps}, bias {bias}, x {shape}")
    x, g = leaf(d["x"]), leaf(d["param/weight"])
    leaves = {"dx": x, "grad/weight": g}
    mu = x.mean(dim=-1, keepdim=True)
    var = (x - mu).pow(2).mean(dim=-1, keepdim=True)
    y = (x - mu) / torch.sqrt(var + eps) * g
    if bias:
        b = leaves["grad/bias"] = leaf(d["param/bias"])
        y = y + b
    check("y", d["y"], y)
    # PyTorch's own layer_norm agrees with the formula (a check on the check).
    check("formula vs F.layer_norm", y, torch.nn.functional.layer_norm(
        x, (8,), g, b if bias else None, eps), atol=1e-12, rtol=1e-12)
    check_grads(d, y, leaves)
finish()
