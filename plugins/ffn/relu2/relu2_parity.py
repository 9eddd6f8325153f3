"""Squared-ReLU FFN against PyTorch, from So et al. (2021), "Primer",
section 3: squared ReLU, max(0, h)^2, in place of the ReLU of Vaswani et al.
(2017), eq. 2: FFN(x) = max(0, x W1 + b1)^2 W2 + b2 (biases as model.bias),
F = model.d_ff or 4 * d_model when it is 0."""

import torch
from parity import check, check_grads, dump, finish, leaf

for d_ff, bias, width in [(12, 1, 12), (0, 0, 32)]:  # d_ff 0: the rule, 4 * 8
    d = dump(kind="ffn", plugin="relu2", d_model=8, d_ff=d_ff, bias=bias, shape="2,5,8")
    print(f"d_ff {d_ff}, bias {bias}")
    x = leaf(d["x"])
    p = {n[len("param/"):]: leaf(d[n]) for n in d if n.startswith("param/")}
    assert p["w_1.weight"].shape == (width, 8), p["w_1.weight"].shape
    b = lambda name: p[name] if bias else 0  # noqa: E731
    h = x @ p["w_1.weight"].T + b("w_1.bias")
    positive = torch.where(h > 0, h, torch.zeros_like(h))
    y = (positive * positive) @ p["w_2.weight"].T + b("w_2.bias")
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x, **{"grad/" + k: v for k, v in p.items()}})
finish()
