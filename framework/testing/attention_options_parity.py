"""The attention options (framework/attention/attention_extras.h) against
PyTorch, from their published formulas (never from tvlab's code), on every
registered layout:

  QK-norm (OLMo 2, Qwen 3): q and k per head over the head dims,
    RMSNorm  z / sqrt(mean(z^2) + eps) * w, or
    LayerNorm (z - mean) / sqrt(var + eps) * w (torch.nn.functional.layer_norm),
    eps 1e-6, before the rotary positions;
  logit soft-cap (Gemma 2): logits -> c * tanh(logits / c), before the mask;
  sink (softmax1, Miller 2023; gpt-oss): one more softmax entry per row with
    logit 0 (off-by-one) or a learned logit per head, whose value is zero;
  output gate (Qwen3-Next): each head's output times sigmoid(x W_g + b_g),
    one gate per head (headwise) or per head dim (elementwise), before the
    output projection.

The layouts' own formulas come from their folders (attention_parity.py);
the options wrap the `attend(q, k, v)` they call. With rotary positions the
rotation happens inside that wrapper after QK-norm, except for a layout whose
formula rotates only a part of each head itself (ROTATES_PART_OF_EACH_HEAD,
MLA's decoupled keys): QK-norm then acts on the assembled heads. Every
tensor (y, dx and every parameter's gradient, the options' own included)
must agree within 1e-5 relative (attention_parity's rule).
"""

import torch

from attention_parity import D_MODEL, NUM_HEADS, TOLERANCE, _errors, linear, split_heads
from parity import dump, finish, formula, leaf, options_of, record, registered

EPS = 1e-6
# (name, dump arguments) of the option sets checked.
OPTION_SETS = [
    ("softcap", {"softcap": 0.3}),
    ("sink_off_by_one", {"sink": "off_by_one"}),
    ("sink_learned", {"sink": "learned"}),
    ("qk_rmsnorm", {"qk_norm": "rmsnorm"}),
    ("qk_layernorm", {"qk_norm": "layernorm"}),
    ("gate_headwise", {"gate": "headwise"}),
    ("gate_elementwise", {"gate": "elementwise"}),
    ("all", {"softcap": 0.3, "sink": "learned", "qk_norm": "rmsnorm", "gate": "elementwise"}),
]


def qk_norm(z, weight, kind):  # z (B, heads, T, hs), weight (hs)
    if kind == "layernorm":
        return torch.nn.functional.layer_norm(z, (z.shape[-1],), weight=weight, eps=EPS)
    return z * torch.rsqrt(z.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight


def softmax_with_sink(logits, sink):  # logits (B, H, T, S), sink (H) -> (B, H, T, S)
    b, h, t, _ = logits.shape
    column = sink.reshape(1, h, 1, 1).expand(b, h, t, 1)
    return torch.softmax(torch.cat([logits, column], dim=-1), dim=-1)[..., :-1]


def gate(x, p, heads):  # x (B, T, C) -> (B, H, T, 1 or hs)
    return split_heads(torch.sigmoid(linear(x, p, "options.gate")), heads)


def run_case(layout_name, score_name, position, option_name, args, salt):
    d = dump(kind="attention", layout=layout_name, score=score_name, position=position, cross=0,
             d_model=D_MODEL, num_heads=NUM_HEADS, bias=1, salt=salt, **args)
    leaves = {"dx": leaf(d["x"])}
    for name in d:
        if name.startswith("param/"):
            leaves["grad/" + name[len("param/"):]] = leaf(d[name])
    p = {n[len("grad/"):]: t for n, t in leaves.items() if n.startswith("grad/")}
    x = leaves["dx"]
    layout = formula("attention_layout", layout_name)
    score = formula("attention_score", score_name)
    rotate = None
    if position != "none":
        rope = formula("position", position)
        rotate = lambda z: rope.rotate(z, 0, options_of(""))  # noqa: E731
    layout_rotates = rotate is not None and getattr(layout, "ROTATES_PART_OF_EACH_HEAD", False)
    score_params = {n[len("score."):]: t for n, t in p.items() if n.startswith("score.")}

    def attend(q, k, v):  # (B, H, T, d), (B, H, S, d), (B, H, S, dv) -> (B, H, T, dv)
        if "qk_norm" in args:
            q = qk_norm(q, p["options.q_norm"], args["qk_norm"])
            k = qk_norm(k, p["options.k_norm"], args["qk_norm"])
        if rotate is not None and not layout_rotates:
            q, k = rotate(q), rotate(k)
        logits = score.logits(q, k, score_params, {})  # (B, H, T, S)
        if "softcap" in args:
            cap = args["softcap"]
            logits = cap * torch.tanh(logits / cap)
        logits = logits + d["mask"]
        if args.get("sink") == "learned":
            weights = softmax_with_sink(logits, p["options.sink_logits"])
        elif args.get("sink") == "off_by_one":
            weights = softmax_with_sink(logits, torch.zeros(logits.shape[1]))
        else:
            weights = torch.softmax(logits, dim=-1)
        out = weights @ v
        return out * gate(x, p, NUM_HEADS) if "gate" in args else out

    layout_params = {n[len("layout."):]: t for n, t in p.items() if n.startswith("layout.")}
    y = layout.layer(layout_params, x, x, NUM_HEADS, {}, rotate if layout_rotates else None, attend)
    (y * d["g"]).sum().backward()
    # A gradient that is one sum of cancelling terms is measured on the
    # terms' size, as attention_parity does (differential's lambdas).
    scales = layout.gradient_scales() if hasattr(layout, "gradient_scales") else {}
    errors = _errors(d, y, leaves, scales)
    worst = max(errors, key=errors.get)
    record(errors[worst] <= TOLERANCE, "%-45s %2d tensors, worst relative error %.2e (%s)"
           % (f"{layout_name}_{score_name}_{position}_{option_name}", len(errors), errors[worst], worst))


def main():
    _, default_score, _ = registered("attention_score")
    _, _, layouts = registered("attention_layout")
    salt = 500
    for layout_name in layouts:
        fewer_heads = getattr(formula("attention_layout", layout_name), "ATTENDS_WITH_FEWER_HEADS", False)
        for option_name, args in OPTION_SETS:
            # A learned sink and the gate have one parameter per model head;
            # validation refuses them with such a layout.
            if fewer_heads and (args.get("sink") == "learned" or "gate" in args):
                continue
            run_case(layout_name, default_score, "none", option_name, args, salt)
            salt += 10
        # QK-norm before RoPE (a scale that is not 1 shows the order).
        run_case(layout_name, default_score, "rope", "qk_rmsnorm", {"qk_norm": "rmsnorm"}, salt)
        salt += 10
    finish()


if __name__ == "__main__":
    main()
