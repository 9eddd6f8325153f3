"""Peri-LN against PyTorch. INPUT_AND_OUTPUT (Kim et al. 2025; Gemma 2):
x + Norm_out(f(Norm_in(x))). OUTPUT_ONLY (OLMo 2's reordered norm):
x + Norm(f(x)), with no input norm at all (no "norm" parameters)."""

from parity import finish, record
from placement_parity import check_case

for norm in ("layernorm", "rmsnorm"):
    check_case("peri_ln", lambda x, f, n, ctx: x + n["out_norm"](f(n["norm"](x))), norm=norm)
    d = check_case("peri_ln", lambda x, f, n, ctx: x + n["out_norm"](f(x)), norm=norm,
                   options="norms: OUTPUT_ONLY")
    record(not any(k.startswith("param/wrapper.norm.") for k in d),
           "OUTPUT_ONLY has no input-norm parameters")
finish()
