"""Multi-token prediction against PyTorch, from Gloeckle et al. 2024: a
shared trunk (here a Pre-LN decoder: x + Attn(LN(x)), x + FFN(LN(x)), final
LN; causal attention over 2 heads; ReLU FFN) whose output z feeds the main
head W z + b and n - 1 = 2 extra heads, head k being one more Pre-LN block
on z with its own final LN, then the shared unembedding. Head k's loss is
the mean cross-entropy of its logits at t against the token at t + k
(the row's target at t + k - 1; ignored targets and positions past the
row skipped). Written here from the paper, not from tvlab's code; the main
logits, each head's loss and every gradient of
sum(y * g) + sum_k w_k loss_k are compared."""

import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

from parity import check, check_grads, finish, leaf, record

torch.set_default_dtype(torch.float64)
IGNORE = -100


def load(path):
    tensors = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            rank = int(fields[1])
            shape = [int(d) for d in fields[2:2 + rank]]
            tensors[fields[0]] = torch.tensor([float(v) for v in fields[2 + rank:]]).reshape(shape)
    return tensors


def block(p, x, pre, heads=2):
    ln = lambda x, n: F.layer_norm(x, x.shape[-1:], p[n + ".weight"], p[n + ".bias"], eps=1e-5)
    lin = lambda x, n: F.linear(x, p[n + ".weight"], p[n + ".bias"])
    b, t, c = x.shape
    hs = c // heads
    split = lambda z: z.view(b, t, heads, hs).transpose(1, 2)  # (B, H, T, hs)
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    a = ln(x, pre + "attention_residual.norm")
    q, k, v = (split(lin(a, pre + "attention." + w)) for w in ("w_q", "w_k", "w_v"))
    s = ((q @ k.transpose(-1, -2)) / math.sqrt(hs)).masked_fill(~causal, float("-inf"))
    x = x + lin((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c), pre + "attention.w_o")
    return x + lin(torch.relu(lin(ln(x, pre + "ffn_residual.norm"), pre + "ffn.w_1")), pre + "ffn.w_2")


def forward(p, tokens, extra=2, layers=2):
    ln = lambda x, n: F.layer_norm(x, x.shape[-1:], p[n + ".weight"], p[n + ".bias"], eps=1e-5)
    unembed = lambda z: F.linear(z, p["head.weight"], p["head.bias"])
    x = p["embedding.weight"][tokens]  # (B, T, C)
    for l in range(layers):
        x = block(p, x, f"decoder.layers.{l}.")
    z = ln(x, "decoder.final_norm")  # the trunk's output
    heads = []
    for k in range(2, 2 + extra):
        name = f"mtp.head_{k}."
        heads.append(unembed(ln(block(p, z, name + "layers.0."), name + "final_norm")))
    return unembed(z), heads


def head_loss(logits, targets, k):
    b, t, v = logits.shape
    ahead = torch.full_like(targets, IGNORE)
    ahead[:, :t - (k - 1)] = targets[:, k - 1:]  # the token at t + k
    return F.cross_entropy(logits.reshape(b * t, v), ahead.reshape(-1), ignore_index=IGNORE)


out = os.path.join(os.environ.get("TEST_TMPDIR", tempfile.gettempdir()), "multi_token.txt")
subprocess.run([sys.argv[1], out], check=True)
d = load(out)
tokens, targets = d["tokens"].long(), d["targets"].long()
params = {k[len("param/"):]: leaf(v) for k, v in d.items() if k.startswith("param/")}
y, heads = forward(params, tokens)
check("y", d["y"], y)
total = (y * d["g"]).sum()
for k, logits in zip((2, 3), heads):
    name = f"mtp.head_{k}_loss"
    loss = head_loss(logits, targets, k)
    check("loss/" + name, d["loss/" + name], loss)
    record(abs(d["weight/" + name].item() - {2: 0.5, 3: 0.25}[k]) < 1e-7, f"{name} weight {d['weight/' + name].item()}")
    total = total + d["weight/" + name].item() * loss
total.backward()
for name, t in params.items():
    check("grad/" + name, d["grad/" + name], t.grad if t.grad is not None else torch.zeros_like(t))
finish()
