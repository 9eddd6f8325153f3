"""SwiGLU FFN against PyTorch, from Shazeer (2020), "GLU Variants Improve
Transformer", eq. 6 with biases as an option:
y = (Swish_1(x W + b) * (x V + c)) W2 + b2, Swish_1(z) = z sigmoid(z).
tvlab names W, V, W2 as w_1, w_3, w_2 (Meta's Llama code)."""

import torch
from parity import check, check_grads, dump, finish, leaf

# d_ff 0 exercises the width rule: int(2 * 4 * 12 / 3) = 32 -> multiple of 5 = 35.
for d_ff, bias, multiple_of, width in [(12, 0, 4, 12), (0, 1, 5, 35)]:
    d = dump(kind="ffn", plugin="swiglu", options=f"multiple_of: {multiple_of}", d_model=12,
             d_ff=d_ff, bias=bias, shape="2,3,12")
    print(f"d_ff {d_ff}, bias {bias}, multiple_of {multiple_of}")
    x = leaf(d["x"])
    p = {n[len("param/"):]: leaf(d[n]) for n in d if n.startswith("param/")}
    assert p["w_1.weight"].shape == (width, 12), p["w_1.weight"].shape
    b = lambda name: p[name] if bias else 0
    gate = x @ p["w_1.weight"].T + b("w_1.bias")
    up = x @ p["w_3.weight"].T + b("w_3.bias")
    y = (gate * torch.sigmoid(gate) * up) @ p["w_2.weight"].T + b("w_2.bias")
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x, **{"grad/" + k: v for k, v in p.items()}})
finish()
