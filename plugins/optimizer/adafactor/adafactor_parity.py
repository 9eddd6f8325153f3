"""Adafactor parity: tvlab's adafactor plugin against Adafactor written from
Shazeer & Stern 2018 (Algorithms 4 and 5, with update clipping and the
relative step's parameter scale) in PyTorch, float64, 10 steps, with
parameter groups by role (lr multipliers, decay switches). PyTorch 1.13 has
no Adafactor; the formula follows the paper with an explicit rate, as
transformers' Adafactor(relative_step=False):

    rate = lr * (scale_parameter ? max(eps2, RMS(p)) : 1);  b2 = 1 - t^decay_rate
    matrices:  R = b2 R + (1 - b2) mean_cols(g^2 + eps1),  C likewise over rows,
               U = g * rsqrt(R / mean(R)) rsqrt(C)  (outer product)
    vectors:   V = b2 V + (1 - b2)(g^2 + eps1),  U = g rsqrt(V)
    U = rate U / max(1, RMS(U) / d);  beta1 > 0: M = beta1 M + (1 - beta1) U, U = M
    p = p - wd rate p - U
"""

import torch


def rms(x):
    return x.pow(2).mean().sqrt()


def paper_adafactor(lr, eps1, eps2, d, decay_rate, beta1, wd, scale_parameter):
    def make_step(params, groups):
        state = {n: {} for n in params}
        t = [0]

        def step():
            t[0] += 1
            b2 = 1 - t[0] ** decay_rate
            for n, p in params.items():
                g, s = p.grad, state[n]
                rate = lr * groups[n][0]
                if scale_parameter:
                    rate *= max(eps2, rms(p).item())
                u = g * g + eps1
                if p.dim() >= 2:
                    s.setdefault("R", torch.zeros(p.shape[0]))
                    s.setdefault("C", torch.zeros(p.shape[1]))
                    s["R"] = b2 * s["R"] + (1 - b2) * u.mean(dim=1)
                    s["C"] = b2 * s["C"] + (1 - b2) * u.mean(dim=0)
                    update = g * (s["R"] / s["R"].mean()).rsqrt()[:, None] * s["C"].rsqrt()[None, :]
                else:
                    s.setdefault("V", torch.zeros_like(p))
                    s["V"] = b2 * s["V"] + (1 - b2) * u
                    update = g * s["V"].rsqrt()
                update = rate * update / max(1.0, rms(update).item() / d)
                if beta1 > 0:
                    s.setdefault("M", torch.zeros_like(p))
                    s["M"] = beta1 * s["M"] + (1 - beta1) * update
                    update = s["M"]
                if groups[n][1]:
                    p.sub_(wd * rate * p)
                p.sub_(update)
        return step
    return make_step


CASES = [
    ("defaults", "", (1, 1, 1, 1, 1), (1, 1, 1, 1, 1), (1e-3, 1e-30, 1e-3, 1.0, -0.8, 0.0, 0.0, False)),
    ("groups", "lr: 0.01 beta1: 0.9 weight_decay: 0.1 scale_parameter: true clip_threshold: 0.5",
     (0.5, 2, 1, 0.25, 1), (0, 1, 0, 1, 1), (0.01, 1e-30, 1e-3, 0.5, -0.8, 0.9, 0.1, True)),
]

if __name__ == "__main__":
    from optimizer_parity import compare, run
    from parity import finish
    for label, options, multipliers, decay, hyper in CASES:
        compare(run("adafactor", options, multipliers, decay, steps=10), 10, paper_adafactor(*hyper), label)
    finish()
