"""Sandwich-LN against PyTorch (Ding et al. 2021, CogView, figure 4):
x + LN_out(f(LN_in(x)))."""

from placement_parity import run

run("sandwich_ln", lambda x, f, norm, ctx: x + norm["out_norm"](f(norm["norm"](x))))
