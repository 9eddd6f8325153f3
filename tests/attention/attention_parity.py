"""Recomputes every case of attention_parity_dump in PyTorch (float64) from
the published formulas and compares outputs and gradients with tvlab's.

usage: attention_parity.py DIR   (DIR holds cases.json and <case>.safetensors)

Formulas (not tvlab's code):
  scores     scaled_dot_product  q.k / sqrt(d_k)              Vaswani et al. 2017
             dot_product         q.k                          Luong et al. 2015
             additive            v^T tanh(W_q q + W_k k)      Bahdanau et al. 2015
  layouts    mha/gqa/mqa  q = x W_q^T + b (H heads), k, v = m W^T + b (G heads);
                          query head h reads key/value head h // (H/G)
                          (torch.repeat_interleave, as Llama's repeat_kv)
             mla          DeepSeek-V2 eqs. 9-11 and 12-18 (section 2.1):
                          c = m W_dkv; k_C = c W_uk; v = c W_uv; k_R = RoPE(m W_kr)
                          shared by heads; c_q = x W_dq (if present);
                          q_C = c_q W_uq; q_R = RoPE(c_q W_qr);
                          q = [q_C; q_R], k = [k_C; k_R]
  position   rope  RoFormer: pairs turn by pos * base^(-2i/d); rotary
                   positions act on self-attention only
  attention  softmax(score + mask) v per head; heads concatenated; W_o.
Every tensor compared must satisfy max|ours - torch| <= 1e-5 * max|torch|
(for a bias gradient, max|torch| of it or of its weight's gradient, see
run_case).
"""

import json
import math
import struct
import sys

import numpy as np
import torch

TOLERANCE = 1e-5


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (path, name, info["dtype"])
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[base + begin:base + end], dtype="<f4").reshape(info["shape"])
        out[name] = torch.tensor(array.astype(np.float64))
    return out


def linear(x, p, name):
    y = x @ p[name + ".weight"].T
    if name + ".bias" in p:
        y = y + p[name + ".bias"]
    return y


def split_heads(x, heads):  # (B, T, heads * d) -> (B, heads, T, d)
    b, t, w = x.shape
    return x.reshape(b, t, heads, w // heads).transpose(1, 2)


def merge_heads(x):  # (B, H, T, d) -> (B, T, H * d)
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


def rope(x, base, halves):  # x (..., T, D) at positions 0 .. T-1
    t, d = x.shape[-2], x.shape[-1]
    i = torch.arange(d // 2, dtype=torch.float64)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * base ** (-2.0 * i / d)[None, :]
    cos, sin = torch.cos(angle), torch.sin(angle)
    if halves:
        a, b = x[..., : d // 2], x[..., d // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def score(kind, q, k, sp):
    if kind == "scaled_dot_product":
        return q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if kind == "dot_product":
        return q @ k.transpose(-1, -2)
    if kind == "additive":
        wq = q @ sp["w_q.weight"].T  # (B, H, T, D)
        wk = k @ sp["w_k.weight"].T  # (B, H, S, D)
        return torch.tanh(wq[:, :, :, None, :] + wk[:, :, None, :, :]) @ sp["v"]
    raise ValueError("no PyTorch formula for score " + kind)


def grouped(p, x, m, heads, hs, rotate):
    g = p["w_k.weight"].shape[0] // hs
    q = split_heads(linear(x, p, "w_q"), heads)
    k = split_heads(linear(m, p, "w_k"), g)
    v = split_heads(linear(m, p, "w_v"), g)
    if rotate:
        q, k = rotate(q), rotate(k)
    return q, k.repeat_interleave(heads // g, dim=1), v.repeat_interleave(heads // g, dim=1)


def mla(p, x, m, heads, hs, rotate):
    c = linear(m, p, "w_dkv")
    k = split_heads(linear(c, p, "w_uk"), heads)
    v = split_heads(linear(c, p, "w_uv"), heads)
    cq = linear(x, p, "w_dq") if "w_dq.weight" in p else x
    q = split_heads(linear(cq, p, "w_uq"), heads)
    if "w_kr.weight" in p:
        k_rope = linear(m, p, "w_kr")[:, None]  # (B, 1, S, d_r), one head for all
        q_rope = split_heads(linear(cq, p, "w_qr"), heads)
        if rotate:
            q_rope, k_rope = rotate(q_rope), rotate(k_rope)
        q = torch.cat([q, q_rope], dim=-1)
        k = torch.cat([k, k_rope.expand(-1, heads, -1, -1)], dim=-1)
    return q, k, v


LAYOUTS = {"mha": grouped, "gqa": grouped, "mqa": grouped, "mla": mla}


def relative_error(ours, theirs, scale=0.0):
    scale = max(theirs.abs().max().item(), scale, 1e-30)
    return (ours - theirs).abs().max().item() / scale


def run_case(case, t, d_model, heads):
    hs = d_model // heads
    prefixes = ("layout.", "score.")
    leaves = {"x": t["x"].clone().requires_grad_()}
    if case["cross"]:
        leaves["memory"] = t["memory"].clone().requires_grad_()
    for name in t:
        if name.startswith(prefixes):
            leaves[name] = t[name].clone().requires_grad_()
    lp = {n[len("layout."):]: v for n, v in leaves.items() if n.startswith("layout.")}
    sp = {n[len("score."):]: v for n, v in leaves.items() if n.startswith("score.")}
    x = leaves["x"]
    m = leaves["memory"] if case["cross"] else x
    rotate = None
    if case["position"] == "rope" and not case["cross"]:
        halves = "HALVES" in case["position_options"]
        rotate = lambda z: rope(z, 10000.0, halves)
    elif case["position"] not in ("none", "rope"):
        raise ValueError("no PyTorch formula for position " + case["position"])
    q, k, v = LAYOUTS[case["layout"]](lp, x, m, heads, hs, rotate)
    weights = torch.softmax(score(case["score"], q, k, sp) + t["mask"], dim=-1)
    y = linear(merge_heads(weights @ v), lp, "w_o")
    (y * t["r"]).sum().backward()

    grads = {n: (l.grad if l.grad is not None else torch.zeros_like(l)) for n, l in leaves.items()}
    errors = {"y": relative_error(t["y"], y.detach())}
    for name, grad in grads.items():
        # A bias gradient is measured on the scale of its layer's weight
        # gradient. Some are zero in exact arithmetic: with a dot-product
        # score a key bias adds q.b_k to every logit of a row, which softmax
        # cancels, so d loss / d b_k is a sum of terms of the weight
        # gradient's size that cancels to 0, and float32 leaves rounding noise.
        scale = 0.0
        if name.endswith(".bias"):
            scale = grads[name[: -len(".bias")] + ".weight"].abs().max().item()
        errors["grad." + name] = relative_error(t["grad." + name], grad, scale)
    return errors


def main():
    directory = sys.argv[1]
    with open(directory + "/cases.json") as f:
        spec = json.load(f)
    failures = 0
    for case in spec["cases"]:
        tensors = read_safetensors(directory + "/" + case["name"] + ".safetensors")
        errors = run_case(case, tensors, spec["d_model"], spec["num_heads"])
        worst = max(errors, key=errors.get)
        ok = errors[worst] <= TOLERANCE
        failures += not ok
        print("%-4s %-45s %2d tensors, worst relative error %.2e (%s)"
              % ("ok" if ok else "FAIL", case["name"], len(errors), errors[worst], worst))
    print("%d of %d cases match PyTorch within %g relative"
          % (len(spec["cases"]) - failures, len(spec["cases"]), TOLERANCE))
    return 1 if failures else 0


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    sys.exit(main())
