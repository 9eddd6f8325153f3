"""Lion parity: tvlab's lion plugin against Lion written from the paper in
PyTorch (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms",
Algorithm 2; PyTorch 1.13 has no Lion), float64, 10 steps, with parameter
groups by role (lr multipliers, decay switches).

    c_t     = beta1 m_{t-1} + (1 - beta1) g_t
    theta_t = theta_{t-1} - lr (sign(c_t) + lambda theta_{t-1})
    m_t     = beta2 m_{t-1} + (1 - beta2) g_t
"""

import torch

from optimizer_parity import compare, run
from parity import finish


def paper_lion(lr, beta1, beta2, weight_decay):
    def make_step(params, groups):
        momentum = {n: torch.zeros_like(p) for n, p in params.items()}

        def step():
            for n, p in params.items():
                rate = lr * groups[n][0]
                decay = weight_decay if groups[n][1] else 0.0
                c = beta1 * momentum[n] + (1 - beta1) * p.grad
                p.sub_(rate * (torch.sign(c) + decay * p))
                momentum[n] = beta2 * momentum[n] + (1 - beta2) * p.grad
        return step
    return make_step


cases = [
    ("defaults", "", (1, 1, 1, 1, 1), (1, 1, 1, 1, 1), (1e-4, 0.9, 0.99, 0.0)),
    ("groups", "lr: 0.003 beta1: 0.95 beta2: 0.98 weight_decay: 0.5",
     (0.5, 2, 1, 0.25, 1), (0, 1, 0, 1, 1), (0.003, 0.95, 0.98, 0.5)),
]
for label, options, multipliers, decay, hyper in cases:
    compare(run("lion", options, multipliers, decay, steps=10), 10, paper_lion(*hyper), label)
finish()
