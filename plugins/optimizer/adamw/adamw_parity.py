"""AdamW parity: tvlab's adamw plugin against torch.optim.AdamW (PyTorch's
own implementation, float64), 10 steps, parameter groups by role with their
lr multipliers and decay switches."""

import torch

from optimizer_parity import compare, run
from parity import finish


def torch_adamw(lr, beta1, beta2, eps, weight_decay):
    def make_step(params, groups):
        param_groups = [{"params": [p], "lr": lr * groups[n][0],
                         "weight_decay": weight_decay if groups[n][1] else 0.0}
                        for n, p in params.items()]
        optimizer = torch.optim.AdamW(param_groups, lr=lr, betas=(beta1, beta2), eps=eps,
                                      weight_decay=weight_decay)
        return optimizer.step
    return make_step


cases = [
    ("defaults", "", (1, 1, 1, 1, 1), (1, 1, 1, 1, 1), (1e-3, 0.9, 0.999, 1e-8, 0.01)),
    ("groups", "lr: 0.01 beta1: 0.8 beta2: 0.95 eps: 1e-6 weight_decay: 0.1",
     (0.5, 2, 1, 0.25, 1), (0, 1, 0, 0, 1), (0.01, 0.8, 0.95, 1e-6, 0.1)),
]
for label, options, multipliers, decay, hyper in cases:
    result = run("adamw", options, multipliers, decay, steps=10)
    compare(result, 10, torch_adamw(*hyper), label)
finish()
