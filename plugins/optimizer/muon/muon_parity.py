"""Muon parity: tvlab's muon plugin against Muon written from Jordan et al.
2024 in PyTorch (PyTorch 1.13 has none; float64), 10 steps, with parameter
groups by role: the matrix steps by Muon, the embedding, head, norm and bias
by torch.optim.AdamW at adam_lr (as Jordan's MuonWithAuxAdam).

    buf <- lerp(buf, g, 1 - momentum)
    u   <- nesterov ? lerp(g, buf, momentum) : buf
    X   <- u / (|u|_F + 1e-7); 5 times: A = X X^T, B = b A + c A A, X = a X + B X
           (on the transpose when rows > cols), (a, b, c) = (3.4445, -4.7750, 2.0315)
    p   <- p (1 - lr wd) - lr max(1, rows / cols)^0.5 X
"""

import torch

from optimizer_parity import compare, run
from parity import finish


def newton_schulz(g, steps):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.reshape(g.shape[0], -1)
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    x = x / (x.norm() + 1e-7)
    for _ in range(steps):
        A = x @ x.T
        B = b * A + c * A @ A
        x = a * x + B @ x
    if transposed:
        x = x.T
    return x.reshape(g.shape)


def paper_muon(lr, momentum, nesterov, ns_steps, wd, adam_lr, beta1, beta2, eps, adam_wd):
    def make_step(params, groups):
        matrices = {n: p for n, p in params.items() if groups[n][2] == "matrix"}
        others = [{"params": [p], "lr": adam_lr * groups[n][0], "weight_decay": adam_wd if groups[n][1] else 0.0}
                  for n, p in params.items() if n not in matrices]
        adam = torch.optim.AdamW(others, lr=adam_lr, betas=(beta1, beta2), eps=eps, weight_decay=adam_wd)
        buffers = {n: torch.zeros_like(p) for n, p in matrices.items()}

        def step():
            for n, p in matrices.items():
                rate = lr * groups[n][0]
                buffers[n] = torch.lerp(buffers[n], p.grad, 1 - momentum)
                u = torch.lerp(p.grad, buffers[n], momentum) if nesterov else buffers[n]
                x = newton_schulz(u, ns_steps)
                if groups[n][1]:
                    p.mul_(1 - rate * wd)
                rows, cols = p.shape[0], p.numel() // p.shape[0]
                p.sub_(rate * max(1.0, rows / cols) ** 0.5 * x)
            adam.step()
        return step
    return make_step


cases = [
    ("defaults", "", (1, 1, 1, 1, 1), (1, 1, 1, 1, 1), (0.02, 0.95, True, 5, 0.0, 3e-4, 0.9, 0.95, 1e-10, 0.0)),
    ("groups", "lr: 0.05 momentum: 0.9 nesterov: false ns_steps: 3 weight_decay: 0.1 adam_lr: 0.002 "
               "adam_weight_decay: 0.01",
     (0.5, 2, 1, 0.25, 0.5), (0, 1, 0, 1, 1), (0.05, 0.9, False, 3, 0.1, 0.002, 0.9, 0.95, 1e-10, 0.01)),
]
for label, options, multipliers, decay, hyper in cases:
    compare(run("muon", options, multipliers, decay, steps=10), 10, paper_muon(*hyper), label)
finish()
