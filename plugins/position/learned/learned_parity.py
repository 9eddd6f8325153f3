"""Learned positions against PyTorch: y = x + P[offset : offset + T], P an
nn.Embedding-style table indexed by position (GPT-2's wpe)."""

import torch
from parity import check, check_grads, dump, finish, leaf

for offset in [0, 5]:
    d = dump(kind="position", plugin="learned", hook="embed", d_model=8, max_seq_len=12,
             offset=offset, shape="2,4,8")
    print("offset", offset)
    x, table = leaf(d["x"]), leaf(d["param/weight"])
    positions = torch.arange(offset, offset + 4)
    y = x + torch.nn.functional.embedding(positions, table)
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x, "grad/weight": table})
finish()
