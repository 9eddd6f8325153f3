"""The value residual against PyTorch, from Zhou et al. 2024 (ResFormer) in
modded-nanogpt's form: in layer l > 0, v_l' = (1 - lambda_l) v_l + lambda_l v_0,
v_0 the first layer's values. The whole model is written here from the
published formulas (Pre-LN decoder: x + Attn(LN(x)), x + FFN(LN(x)), final
LN, linear head; causal scaled dot-product attention over 2 heads; ReLU FFN),
not from tvlab's code; outputs and every gradient are compared, and the model
with lambda = 0 must differ (the mix matters)."""

import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

from parity import check, check_grads, finish, leaf, record

torch.set_default_dtype(torch.float64)


def load(path):
    tensors = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            rank = int(fields[1])
            shape = [int(d) for d in fields[2:2 + rank]]
            tensors[fields[0]] = torch.tensor([float(v) for v in fields[2 + rank:]]).reshape(shape)
    return tensors


def forward(p, tokens, heads=2, layers=3, mix=True):
    ln = lambda x, n: F.layer_norm(x, x.shape[-1:], p[n + ".weight"], p[n + ".bias"], eps=1e-5)
    lin = lambda x, n: F.linear(x, p[n + ".weight"], p[n + ".bias"])
    x = p["embedding.weight"][tokens]  # (B, T, C)
    b, t, c = x.shape
    hs = c // heads
    split = lambda z: z.view(b, t, heads, hs).transpose(1, 2)  # (B, H, T, hs)
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    v0 = None
    for l in range(layers):
        pre = f"decoder.layers.{l}."
        a = ln(x, pre + "attention_residual.norm")
        q, k, v = (split(lin(a, pre + "attention." + w)) for w in ("w_q", "w_k", "w_v"))
        if l == 0:
            v0 = v
        elif mix:
            lam = p[pre + "value_residual.lambda"]
            v = (1 - lam) * v + lam * v0
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hs)
        s = s.masked_fill(~causal, float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + lin(o, pre + "attention.w_o")
        f = ln(x, pre + "ffn_residual.norm")
        x = x + lin(torch.relu(lin(f, pre + "ffn.w_1")), pre + "ffn.w_2")
    return lin(ln(x, "decoder.final_norm"), "head")


out = os.path.join(os.environ.get("TEST_TMPDIR", tempfile.gettempdir()), "value_residual.txt")
subprocess.run([sys.argv[1], out], check=True)
d = load(out)
tokens = d["tokens"].long()
params = {k[len("param/"):]: leaf(v) for k, v in d.items() if k.startswith("param/")}
lambdas = [k for k in params if k.endswith("value_residual.lambda")]
record(lambdas == ["decoder.layers.1.value_residual.lambda", "decoder.layers.2.value_residual.lambda"],
       f"one lambda per layer after the first: {lambdas}")
y = forward(params, tokens)
check("y", d["y"], y)
check_grads(d, y, {"grad/" + k: v for k, v in params.items()})
unmixed = forward({k: v.detach() for k, v in params.items()}, tokens, mix=False)
gap = (unmixed - d["y"]).abs().max().item()
record(gap > 1e-3, f"without the mix the logits differ by {gap:.3g} (> 1e-3)")
finish()
