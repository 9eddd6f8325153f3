"""Helpers for an optimizer plugin's PyTorch parity script.

run(plugin, options, multipliers, decay, steps) drives parity_dump
kind=optimizer (parity_dump_optimizer.cc): five parameters, one per role
(embedding, head, norm, bias, matrix), seeded gradients, `steps` steps at
the options' lr. compare(d, steps, make_step) replays them: make_step(params,
groups) gets float64 leaf tensors and, per parameter, its group's
(lr_multiplier, decay) and returns a function that applies one step (e.g. a
torch.optim optimizer's .step, or the paper's formula written out); every
step's parameters are checked against tvlab's within 1e-5 relative.
"""

import torch

from parity import check, dump

ROLES = ["embedding", "head", "norm", "bias", "matrix"]


def run(plugin, options="", multipliers=(1, 1, 1, 1, 1), decay=(1, 1, 1, 1, 1), steps=10):
    d = dump(kind="optimizer", plugin=plugin, options=options,
             steps=steps, multipliers=",".join(str(m) for m in multipliers),
             decay=",".join(str(x) for x in decay))
    return d, multipliers, decay


def names(d):
    return [key[len("param/"):] for key in d if key.startswith("param/")]


def compare(run_result, steps, make_step, label):
    d, multipliers, decay = run_result
    params = {n: d["param/" + n].clone() for n in names(d)}
    groups = {n: (float(multipliers[int(d["role/" + n].item())]), bool(decay[int(d["role/" + n].item())]),
                  ROLES[int(d["role/" + n].item())]) for n in names(d)}
    step = make_step(params, groups)
    for s in range(1, steps + 1):
        for n, p in params.items():
            p.grad = d[f"grad/{s}/{n}"].clone()
        with torch.no_grad():
            step()
        for n, p in params.items():
            check(f"{label} step {s} {n}", d[f"after/{s}/{n}"], p, atol=1e-6, rtol=1e-5)
