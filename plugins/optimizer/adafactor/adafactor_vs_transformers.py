"""The formula of adafactor_parity.py against transformers' Adafactor
(relative_step=False, the cases of the parity test, float64, 10 steps of
random gradients on a matrix and a vector): they agree within 1e-9 relative,
so the plugin, which matches the formula, matches transformers too. Run by
adafactor_transformers_test.sh with bench/.venv's Python (which has
transformers)."""

import os
import sys

import torch
from transformers.optimization import Adafactor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from adafactor_parity import CASES, paper_adafactor  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.manual_seed(0)
shapes = {"matrix": (6, 8), "vector": (8,)}
failed = False
for label, _, _, _, (lr, eps1, eps2, clip, decay_rate, beta1, wd, scale) in CASES:
    ours = {n: torch.rand(s) * 2 - 1 for n, s in shapes.items()}
    theirs = {n: t.clone() for n, t in ours.items()}
    step = paper_adafactor(lr, eps1, eps2, clip, decay_rate, beta1, wd, scale)(
        ours, {n: (1.0, True, "matrix") for n in ours})
    reference = Adafactor(list(theirs.values()), lr=lr, eps=(eps1, eps2), clip_threshold=clip,
                          decay_rate=decay_rate, beta1=beta1 or None, weight_decay=wd,
                          scale_parameter=scale, relative_step=False, warmup_init=False)
    worst = 0.0
    for _ in range(10):
        for n, s in shapes.items():
            g = torch.rand(s) * 2 - 1
            ours[n].grad, theirs[n].grad = g.clone(), g.clone()
        with torch.no_grad():
            step()
        reference.step()
        for n in shapes:
            worst = max(worst, ((ours[n] - theirs[n]).abs() / theirs[n].abs().clamp(min=1e-12)).max().item())
    print(f"{'ok  ' if worst < 1e-9 else 'FAIL'} {label}: max relative difference to transformers {worst:.3g}")
    failed |= not worst < 1e-9
sys.exit(1 if failed else 0)
