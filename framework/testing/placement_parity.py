"""Helpers for a placement plugin's parity script (<name>_parity.py).

The dump (parity_dump kind=placement) runs one residual wrapper of the
placement around a linear sublayer f(h) = h W^T + b; the script gives the
wiring as a PyTorch function of x, f and the wrapper's norms, and this
module checks y and every gradient, with LayerNorm and with RMSNorm:

    from placement_parity import run
    run("pre_ln", lambda x, f, norm, ctx: x + f(norm["norm"](x)))
"""

import torch
import torch.nn.functional as F

from parity import check, check_grads, dump, finish, leaf

# The normalizations' own formulas (PyTorch's layer_norm; RMSNorm from
# Zhang & Sennrich 2019), with each plugin's default eps.
def _layernorm(p, prefix):
    w, b = p[prefix + ".weight"], p.get(prefix + ".bias")
    return lambda h: F.layer_norm(h, h.shape[-1:], w, b, eps=1e-5)


def _rmsnorm(p, prefix):
    w = p[prefix + ".weight"]
    return lambda h: h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * w


_NORMS = {"layernorm": _layernorm, "rmsnorm": _rmsnorm}


def check_case(plugin, wiring, norm="layernorm", options="", num_layers=1, decoder_layers=0,
               decoder_stack=0, shape="2,3,8"):
    """One dump and its checks; returns the dump (for extra checks)."""
    d = dump(kind="placement", plugin=plugin, options=options, norm=norm, d_model=8,
             num_layers=num_layers, decoder_layers=decoder_layers, decoder_stack=decoder_stack,
             shape=shape)
    x = leaf(d["x"])
    params = {k[len("param/"):]: leaf(v) for k, v in d.items() if k.startswith("param/")}
    w, b = params["sublayer.weight"], params.get("sublayer.bias")
    f = lambda h: F.linear(h, w, b)
    names = sorted({k[len("wrapper."):].rsplit(".", 1)[0] for k in params if k.startswith("wrapper.")})
    norms = {n: _NORMS[norm](params, "wrapper." + n) for n in names}
    ctx = {"num_layers": num_layers, "decoder_layers": decoder_layers,
           "decoder_stack": decoder_stack, "options": options}
    y = wiring(x, f, norms, ctx)
    print(f"{plugin} {options or '(defaults)'} norm={norm} N={num_layers} M={decoder_layers} "
          f"decoder_stack={decoder_stack}, norms {names}")
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x, **{"grad/" + k: v for k, v in params.items()}})
    return d


def run(plugin, wiring, options="", **depth):
    """check_case with each normalization; then finish()."""
    for norm in _NORMS:
        check_case(plugin, wiring, norm=norm, options=options, **depth)
    finish()
