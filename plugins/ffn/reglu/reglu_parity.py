"""ReGLU FFN against PyTorch, from Shazeer (2020), "GLU Variants Improve
Transformer", eq. 6 (FFN_ReGLU(x, W, V, W2) = (max(0, xW) * xV) W2) with
biases as an option. tvlab names W, V, W2 as w_1, w_3, w_2 (as swiglu)."""

import torch
from parity import check, check_grads, dump, finish, leaf

# d_ff 0 exercises the width rule: int(2 * 4 * 12 / 3) = 32 -> multiple of 5 = 35.
for d_ff, bias, multiple_of, width in [(12, 0, 4, 12), (0, 1, 5, 35)]:
    options = f"multiple_of: {multiple_of}"
    d = dump(kind="ffn", plugin="reglu", options=options, d_model=12, d_ff=d_ff, bias=bias, shape="2,3,12")
    print(f"d_ff {d_ff}, bias {bias}, {options}")
    x = leaf(d["x"])
    p = {n[len("param/"):]: leaf(d[n]) for n in d if n.startswith("param/")}
    assert p["w_1.weight"].shape == (width, 12), p["w_1.weight"].shape
    b = lambda name: p[name] if bias else 0  # noqa: E731
    gate = x @ p["w_1.weight"].T + b("w_1.bias")
    up = x @ p["w_3.weight"].T + b("w_3.bias")
    y = (torch.where(gate > 0, gate, torch.zeros_like(gate)) * up) @ p["w_2.weight"].T + b("w_2.bias")
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x, **{"grad/" + k: v for k, v in p.items()}})
finish()
