"""SGD parity: tvlab's sgd plugin against torch.optim.SGD (PyTorch's own
implementation, float64), 10 steps: plain, momentum with L2 decay, Nesterov,
with parameter groups by role (lr multipliers, decay switches)."""

import torch

from optimizer_parity import compare, run
from parity import finish


def torch_sgd(lr, momentum, nesterov, weight_decay):
    def make_step(params, groups):
        param_groups = [{"params": [p], "lr": lr * groups[n][0],
                         "weight_decay": weight_decay if groups[n][1] else 0.0}
                        for n, p in params.items()]
        return torch.optim.SGD(param_groups, lr=lr, momentum=momentum, nesterov=nesterov,
                               weight_decay=weight_decay).step
    return make_step


cases = [
    ("plain", "lr: 0.1", (1, 1, 1, 1, 1), (1, 1, 1, 1, 1), (0.1, 0.0, False, 0.0)),
    ("momentum", "lr: 0.05 momentum: 0.9 weight_decay: 0.01",
     (0.5, 2, 1, 0.25, 1), (0, 1, 0, 0, 1), (0.05, 0.9, False, 0.01)),
    ("nesterov", "lr: 0.05 momentum: 0.8 nesterov: true weight_decay: 0.1",
     (1, 0.5, 1, 1, 2), (1, 1, 0, 1, 1), (0.05, 0.8, True, 0.1)),
]
for label, options, multipliers, decay, hyper in cases:
    compare(run("sgd", options, multipliers, decay, steps=10), 10, torch_sgd(*hyper), label)
finish()
