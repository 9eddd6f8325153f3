"""Pre-LN against PyTorch (Xiong et al. 2020, eq. for Pre-LN): x + f(LN(x))."""

from placement_parity import run

run("pre_ln", lambda x, f, norm, ctx: x + f(norm["norm"](x)))
