"""Mixture-of-experts FFN against PyTorch, written from the papers' formulas
with dense per-expert masks (the GShard/Switch dispatch-tensor formulation,
not tvlab's slots): router logits x W_r^T; softmax-then-top-k (Switch,
DeepSeek-MoE: gates are the chosen probabilities) or top-k-then-softmax
(Mixtral: softmax over the chosen logits); expert capacity
ceil(capacity_factor * N * k / E) filled by cumulative sums over a one-hot
dispatch mask, first choices of all tokens before second choices (GShard
Algorithm 1 / Switch), assignments past capacity dropped; each expert a
SwiGLU FFN (Shazeer 2020) evaluated on every token and masked; shared
experts (DeepSeek-MoE) added to every token."""

import math

import torch
from parity import check, check_grads, dump, finish, leaf


def swiglu(x, p, prefix, bias):
    b = lambda name: p[prefix + name] if bias else 0
    gate = x @ p[prefix + "w_1.weight"].T + b("w_1.bias")
    up = x @ p[prefix + "w_3.weight"].T + b("w_3.bias")
    return (gate * torch.sigmoid(gate) * up) @ p[prefix + "w_2.weight"].T + b("w_2.bias")


def moe(x, p, experts, k, top_k_first, capacity_factor, shared, bias):
    n = x.shape[0] * x.shape[1]
    flat = x.reshape(n, -1)
    logits = flat @ p["router.weight"].T  # (N, E)
    if top_k_first:
        chosen_logits, idx = torch.topk(logits, k, dim=1)
        gates = torch.softmax(chosen_logits, dim=1)
    else:
        gates, idx = torch.topk(torch.softmax(logits, dim=1), k, dim=1)
    capacity = n if capacity_factor is None else min(n, math.ceil(capacity_factor * n * k / experts))
    mask = torch.nn.functional.one_hot(idx, experts).to(x.dtype)  # (N, k, E)
    # Position of each assignment in its expert's queue: choice-major cumsum.
    queue = mask.transpose(0, 1).reshape(k * n, experts)
    position = (torch.cumsum(queue, dim=0) - 1).reshape(k, n, experts).transpose(0, 1)
    keep = mask * (position < capacity).to(x.dtype)  # (N, k, E)
    combine = (gates.unsqueeze(-1) * keep).sum(dim=1)  # (N, E)
    y = torch.zeros_like(flat)
    for e in range(experts):
        y = y + combine[:, e:e + 1] * swiglu(flat, p, f"experts.{e}.", bias)
    for s in range(shared):
        y = y + swiglu(flat, p, f"shared_experts.{s}.", bias)
    dropped = 1 - keep.sum() / (n * k)
    return y.reshape(x.shape), float(dropped)


CASES = [  # (E, k, routing, capacity_factor (None: dropless), shared, bias)
    (4, 1, "SOFTMAX_THEN_TOP_K", 0.75, 0, 0),
    (4, 1, "TOP_K_THEN_SOFTMAX", 0.75, 0, 1),
    (4, 2, "SOFTMAX_THEN_TOP_K", 0.5, 0, 1),
    (4, 2, "TOP_K_THEN_SOFTMAX", 0.5, 0, 0),
    (3, 2, "TOP_K_THEN_SOFTMAX", None, 1, 1),
]
for experts, k, routing, factor, shared, bias in CASES:
    options = (f"num_experts: {experts} top_k: {k} routing: {routing} num_shared_experts: {shared} "
               + ("dropless: true" if factor is None else f"dropless: false capacity_factor: {factor}"))
    d = dump(kind="ffn", plugin="moe", options=options, d_model=8, d_ff=6, bias=bias, shape="2,5,8")
    x = leaf(d["x"])
    p = {n[len("param/"):]: leaf(d[n]) for n in d if n.startswith("param/")}
    y, dropped = moe(x, p, experts, k, routing == "TOP_K_THEN_SOFTMAX", factor, shared, bias)
    print(f"E {experts} k {k} {routing} capacity_factor {factor} shared {shared} bias {bias}: "
          f"{dropped:.2f} of assignments dropped")
    assert factor is None or dropped > 0, "a capacity case must drop assignments"
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x, **{"grad/" + k: v for k, v in p.items()}})
finish()
