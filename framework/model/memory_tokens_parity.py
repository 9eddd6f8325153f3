"""Memory tokens against PyTorch, from the definition (Burtsev et al. 2020;
x-transformers' num_memory_tokens): N learned vectors packed in front of the
token embeddings after the additive (sinusoidal, Vaswani et al. 2017)
positions, which the real tokens alone carry, at positions 0..T-1; the
causal mask runs over the packed sequence (memory first), padded keys of a
row hidden, and the stack's outputs at the memory positions are dropped
before the head. The decoder is written here from the published formulas
(Pre-LN: x + Attn(LN(x)), x + FFN(LN(x)), final LN, linear head; 2 heads;
ReLU FFN), not from tvlab's code; outputs and every gradient are compared,
and the model with other memory vectors must differ (they are seen)."""

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


def sinusoidal(t, c, base=10000.0):
    pos = torch.arange(t, dtype=torch.float64)[:, None]
    i = torch.arange(0, c, 2, dtype=torch.float64)[None, :]
    angle = pos / base ** (i / c)
    table = torch.zeros(t, c)
    table[:, 0::2], table[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return table


def forward(p, tokens, lengths, heads=2, layers=2):
    ln = lambda x, n: F.layer_norm(x, x.shape[-1:], p[n + ".weight"], p[n + ".bias"], eps=1e-5)
    lin = lambda x, n: F.linear(x, p[n + ".weight"], p[n + ".bias"])
    x = p["embedding.weight"][tokens]  # (B, T, C)
    b, t, c = x.shape
    x = x + sinusoidal(t, c)  # real tokens at positions 0..T-1
    mem = p["decoder_memory_tokens.embedding"]  # (N, C)
    n = mem.shape[0]
    x = torch.cat([mem.expand(b, n, c), x], dim=1)  # (B, N + T, C)
    s_len = n + t
    hs = c // heads
    split = lambda z: z.view(b, s_len, heads, hs).transpose(1, 2)  # (B, H, N + T, hs)
    causal = torch.ones(s_len, s_len, dtype=torch.bool).tril()
    keys = torch.arange(s_len)[None, :] < (n + lengths)[:, None]  # (B, N + T)
    visible = causal[None, None] & keys[:, None, None, :]  # (B, 1, N + T, N + T)
    for l in range(layers):
        pre = f"decoder.layers.{l}."
        a = ln(x, pre + "attention_residual.norm")
        q, k, v = (split(lin(a, pre + "attention." + w)) for w in ("w_q", "w_k", "w_v"))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hs)
        s = s.masked_fill(~visible, float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, s_len, c)
        x = x + lin(o, pre + "attention.w_o")
        f = ln(x, pre + "ffn_residual.norm")
        x = x + lin(torch.relu(lin(f, pre + "ffn.w_1")), pre + "ffn.w_2")
    return lin(ln(x[:, n:], "decoder.final_norm"), "head")  # (B, T, V): memory outputs dropped


out = os.path.join(os.environ.get("TEST_TMPDIR", tempfile.gettempdir()), "memory_tokens.txt")
subprocess.run([sys.argv[1], out], check=True)
d = load(out)
tokens, lengths = d["tokens"].long(), d["lengths"].long()
params = {k[len("param/"):]: leaf(v) for k, v in d.items() if k.startswith("param/")}
memory = [k for k in params if "memory_tokens" in k]
record(memory == ["decoder_memory_tokens.embedding"] and list(params[memory[0]].shape) == [2, 8],
       f"one (2, 8) memory table: {memory}")
y = forward(params, tokens, lengths)
check("y", d["y"], y)
check_grads(d, y, {"grad/" + k: v for k, v in params.items()})
other = {k: v.detach() for k, v in params.items()}
other["decoder_memory_tokens.embedding"] = torch.zeros(2, 8)
gap = (forward(other, tokens, lengths) - d["y"]).abs().max().item()
record(gap > 1e-3, f"other memory vectors change the logits by {gap:.3g} (> 1e-3)")
finish()
