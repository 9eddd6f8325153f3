"""Post-LN against PyTorch (Vaswani et al. 2017, section 3.1): LN(x + f(x))."""

from placement_parity import run

run("post_ln", lambda x, f, norm, ctx: norm["norm"](x + f(x)))
