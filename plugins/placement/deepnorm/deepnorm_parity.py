"""DeepNorm against PyTorch, from Wang et al. 2022 (DeepNet, arXiv
2203.00555): x_{l+1} = LN(alpha * x_l + f(x_l)), with alpha and the init
gain beta from the paper's table 1 (N encoder / single-stack layers, M
decoder layers):
  one stack:               alpha = (2N)^(1/4),            beta = (8N)^(-1/4)
  encoder of enc-dec:      alpha = 0.81 (N^4 M)^(1/16),   beta = 0.87 (N^4 M)^(-1/16)
  decoder of enc-dec:      alpha = (3M)^(1/4),            beta = (12M)^(-1/4)
"""

import math

from parity import finish, record
from placement_parity import check_case


def alpha_beta(n, m, decoder_stack):
    if m == 0:
        return (2 * n) ** 0.25, (8 * n) ** -0.25
    if decoder_stack:
        return (3 * m) ** 0.25, (12 * m) ** -0.25
    return 0.81 * (n ** 4 * m) ** (1 / 16), 0.87 * (n ** 4 * m) ** (-1 / 16)


def wiring(x, f, norm, ctx):
    alpha, _ = alpha_beta(ctx["num_layers"], ctx["decoder_layers"], ctx["decoder_stack"])
    return norm["norm"](alpha * x + f(x))


for norm in ("layernorm", "rmsnorm"):
    for n, m, stack in [(1, 0, 0), (6, 0, 0), (18, 0, 0), (6, 6, 0), (6, 6, 1), (12, 3, 0), (12, 3, 1)]:
        d = check_case("deepnorm", wiring, norm=norm, num_layers=n, decoder_layers=m,
                       decoder_stack=stack)
        _, beta = alpha_beta(n, m, stack)
        gain = d["init_gain"].item()
        record(math.isclose(gain, beta, rel_tol=1e-6), f"init gain {gain:.7g} = beta {beta:.7g}")
    d = check_case("deepnorm", wiring, norm=norm, num_layers=6, options="scale_init: false")
    record(d["init_gain"].item() == 1.0, "scale_init: false leaves the init gain at 1")
finish()
