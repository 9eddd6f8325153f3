"""The attention scores' and layouts' PyTorch parity, on top of parity.py.

Each score and layout has its formula in its own folder, written from the
paper (never from tvlab's code), in <name>_parity.py:

  plugins/score/<name>/      logits(q, k, p, options) -> (B, H, T, S)
                             q (B, H, T, d), k (B, H, S, d); p: the score's
                             parameters by name
  plugins/attention/<name>/  layer(p, x, memory, num_heads, options, rotate, attend) -> (B, T, C)
                             x (B, T, C), memory (B, S, C) (x itself for
                             self-attention), p: the layout's parameters;
                             rotate(z): the case's rotary positions applied to
                             z (..., T, D), or None; attend(q, k, v):
                             softmax(logits + mask) v per head, (B, H, T, dv)
  plugins/position/<name>/   rotate(x, offset, options) (rotary positions only)
                             x (..., T, D) turned to positions offset, offset + 1, ...

`options` is the plugin's options as {field: value string} (parity.options_of).
Each script ends with

    if __name__ == "__main__":
        check_score("<name>", [extra cases])      # or check_layout

so that the other scripts can import its formula without running its checks.

check_layout(name): the layout with every registered score on causal, padded
self-attention (the layouts' dumps link every score, so a new score folder is
checked with every layout too), with the default score on padded
cross-attention, and the extra cases. check_score(name): the score through
the default layout, self and cross, and the extra cases. An extra case is a
dict of the keys of CASE below that differ; rotary positions act on
self-attention only. Every tensor (y and the gradients of x, memory and each
parameter of sum(y * g)) must satisfy max|tvlab - torch| <= 1e-5 * max|torch|;
a bias gradient is measured on the scale of its weight's gradient (see
_errors).
"""

import torch

from parity import dump, finish, formula, leaf, options_of, record, registered

TOLERANCE = 1e-5
D_MODEL, NUM_HEADS = 16, 4
CASE = {"layout": None, "score": None, "position": "none", "layout_options": "",
        "score_options": "", "position_options": "", "cross": False}


def _name(c):
    name = f"{c['layout']}_{c['score']}_{'cross' if c['cross'] else 'self'}"
    if c["position"] != "none":
        name += "_" + c["position"]
    if c["layout_options"] or c["score_options"] or c["position_options"]:
        name += "_options"
    return name


def _relative_error(ours, theirs, scale=0.0):
    scale = max(theirs.abs().max().item(), scale, 1e-30)
    return (ours - theirs).abs().max().item() / scale


def _errors(d, y, leaves, layout_scales):
    errors = {"y": _relative_error(d["y"], y.detach())}
    grads = {n: (t.grad if t.grad is not None else torch.zeros_like(t)) for n, t in leaves.items()}
    for name, grad in grads.items():
        # A bias gradient is measured on the scale of its layer's weight
        # gradient. Some are zero in exact arithmetic: with a dot-product
        # score a key bias adds q.b_k to every logit of a row, which softmax
        # cancels, so d loss / d b_k is a sum of terms of the weight
        # gradient's size that cancels to 0, and float32 leaves rounding noise.
        scale = 0.0
        if name.endswith(".bias") and name[: -len(".bias")] + ".weight" in grads:
            scale = grads[name[: -len(".bias")] + ".weight"].abs().max().item()
        # A layout may give the scale of a gradient that is one sum of
        # cancelling terms (its formula's gradient_scales(): the terms' size).
        scale = max(scale, layout_scales.get(name[len("grad/layout."):], 0.0))
        errors[name] = _relative_error(d[name], grad, scale)
    return errors


def run_case(c, salt):
    """Dumps case `c` (a full CASE) from tvlab, recomputes it in PyTorch and
    records whether every tensor matches."""
    d = dump(kind="attention", layout=c["layout"], layout_options=c["layout_options"],
             score=c["score"], score_options=c["score_options"], position=c["position"],
             position_options=c["position_options"], cross=int(c["cross"]), d_model=D_MODEL,
             num_heads=NUM_HEADS, bias=1, salt=salt)
    leaves = {"dx": leaf(d["x"])}
    if c["cross"]:
        leaves["dmemory"] = leaf(d["memory"])
    for name in d:
        if name.startswith("param/"):
            leaves["grad/" + name[len("param/"):]] = leaf(d[name])

    def params(prefix):
        return {n[len(prefix):]: t for n, t in leaves.items() if n.startswith(prefix)}

    x = leaves["dx"]
    memory = leaves["dmemory"] if c["cross"] else x
    rotate = None
    if c["position"] != "none" and not c["cross"]:
        position = formula("position", c["position"])
        position_options = options_of(c["position_options"])
        rotate = lambda z: position.rotate(z, 0, position_options)  # noqa: E731
    score = formula("attention_score", c["score"])
    score_params, score_options = params("grad/score."), options_of(c["score_options"])

    def attend(q, k, v):  # (B, H, T, d), (B, H, S, d), (B, H, S, dv) -> (B, H, T, dv)
        logits = score.logits(q, k, score_params, score_options)  # (B, H, T, S)
        return torch.softmax(logits + d["mask"], dim=-1) @ v

    layout = formula("attention_layout", c["layout"])
    y = layout.layer(params("grad/layout."), x, memory, NUM_HEADS, options_of(c["layout_options"]),
                     rotate, attend)
    (y * d["g"]).sum().backward()
    scales = layout.gradient_scales() if hasattr(layout, "gradient_scales") else {}
    errors = _errors(d, y, leaves, scales)
    worst = max(errors, key=errors.get)
    record(errors[worst] <= TOLERANCE, "%-45s %2d tensors, worst relative error %.2e (%s)"
           % (_name(c), len(errors), errors[worst], worst))


def _run(cases):
    for i, c in enumerate(cases):
        run_case({**CASE, **c}, salt=100 + 10 * i)
    finish()


def check_layout(name, extra=()):
    """Checks layout `name` (see the module comment) and exits non-zero on a mismatch."""
    _, default_score, scores = registered("attention_score")
    cases = [{"layout": name, "score": score} for score in scores]
    cases.append({"layout": name, "score": default_score, "cross": True})
    cases += [{"layout": name, "score": default_score, **c} for c in extra]
    _run(cases)


def check_score(name, extra=()):
    """Checks score `name` (see the module comment) and exits non-zero on a mismatch."""
    _, default_layout, _ = registered("attention_layout")
    cases = [{"layout": default_layout, "score": name},
             {"layout": default_layout, "score": name, "cross": True}]
    cases += [{"layout": default_layout, "score": name, **c} for c in extra]
    _run(cases)


def check_mixer(name, extra=()):
    """Checks recurrent mixer `name` (a layout declaring kRecurrentMixer,
    docs/mixers.md) and exits non-zero on a mismatch: causal padded
    self-attention with the default score (a mixer refuses other scores,
    positions inside attention and cross-attention), plus the extra cases
    (e.g. other layout_options). Its formula's layer() ignores `attend` and
    `rotate` and writes the paper's recurrence itself."""
    _, default_score, _ = registered("attention_score")
    cases = [{"layout": name, "score": default_score}]
    cases += [{"layout": name, "score": default_score, **c} for c in extra]
    _run(cases)


# Plumbing the layouts' formulas share (not a formula of any plugin).
def linear(x, p, name):
    """x W^T (+ b): p[name + ".weight"] (out, in), p[name + ".bias"] if present."""
    y = x @ p[name + ".weight"].T
    return y + p[name + ".bias"] if name + ".bias" in p else y


def split_heads(x, heads):  # (B, T, heads * d) -> (B, heads, T, d)
    b, t, w = x.shape
    return x.reshape(b, t, heads, w // heads).transpose(1, 2)


def merge_heads(x):  # (B, H, T, d) -> (B, T, H * d)
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)
