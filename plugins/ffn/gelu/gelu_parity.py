"""GELU FFN against PyTorch, from Hendrycks & Gimpel (2016):
gelu(x) = x Phi(x) = x/2 (1 + erf(x / sqrt 2)), or its tanh approximation
x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); y = gelu(x W1^T + b1) W2^T + b2."""

import math

import torch
from parity import check, check_grads, dump, finish, leaf


def gelu(z, tanh_approximation):
    if tanh_approximation:
        return 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))
    return 0.5 * z * (1 + torch.erf(z / math.sqrt(2)))


for tanh_approximation, bias in [(False, 1), (True, 1), (False, 0)]:
    options = f"tanh_approximation: {str(tanh_approximation).lower()}"
    d = dump(kind="ffn", plugin="gelu", options=options, d_model=8, d_ff=12, bias=bias,
             shape="2,5,8")
    print(options, "bias", bias)
    x = leaf(d["x"])
    names = [n for n in d if n.startswith("param/")]
    p = {n[len("param/"):]: leaf(d[n]) for n in names}
    h = x @ p["w_1.weight"].T + (p["w_1.bias"] if bias else 0)
    y = gelu(h, tanh_approximation) @ p["w_2.weight"].T + (p["w_2.bias"] if bias else 0)
    check("y", d["y"], y)
    # PyTorch's own GELU agrees with the formula (a check on the check).
    approximate = "tanh" if tanh_approximation else "none"
    check("formula vs F.gelu", gelu(h, tanh_approximation),
          torch.nn.functional.gelu(h, approximate=approximate), atol=1e-12, rtol=1e-12)
    check_grads(d, y, {"dx": x, **{"grad/" + k: v for k, v in p.items()}})
finish()
