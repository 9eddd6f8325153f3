"""Differential attention against PyTorch, Ye et al. (2024), "Differential
Transformer", eqs. 1-3 and section 2.1:
  [Q1; Q2] = X W^Q, [K1; K2] = X W^K, V = X W^V    (each head: Q1, Q2, K1, K2
                                                    of d, V of 2d)
  DiffAttn = (softmax(Q1 K1^T / sqrt(d)) - lambda softmax(Q2 K2^T / sqrt(d))) V
  lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init
  head_i = (1 - lambda_init) * RMSNorm(DiffAttn_i), y = Concat(heads) W^O
with h = H / 2 heads for a Transformer of H heads, d = d_model / H. The
projection rows are ordered head by head, Q1 before Q2 within a head (the
paper's code views q as (B, T, 2h, d)). Grouped key/value heads (G of them)
are read from w_k's rows (2 G d); head i reads group i // (h / G), its K1
with Q1 and its K2 with Q2. The case's score stands in for the scaled dot
product, and the subtraction is applied to the two weighted sums (A1 V -
lambda A2 V, the same product). The paper's lambda_init schedule is
0.8 - 0.6 exp(-0.3 (l - 1)) for layer l."""

import math

import torch

from attention_parity import check_layout, linear, merge_heads

HEAD_NORM_EPS = 1e-5  # the paper's code: RMSNorm(2d, eps=1e-5)
# Each softmax map attends with h = H / 2 heads: options with one parameter
# per model head (a learned sink, the output gate) do not apply.
ATTENDS_WITH_FEWER_HEADS = True


_last = {}  # the last layer() call's head outputs, for gradient_scales()


def gradient_scales():
    """The size of the terms of the lambda vectors' gradients, after backward.

    d loss / d lambda = -sum(d loss / d head * A2 v) is one sum over every
    head output; the head norm makes the loss invariant to each head's scale,
    so its terms cancel and float32 keeps ~1e-5 of the result (PyTorch's own
    float32 too). Their size is sum |d loss / d head * A2 v|, times
    exp(lq . lk) |lk| (or |lq|) on the way to each vector."""
    terms = (_last["heads"].grad * _last["a2v"]).abs().sum()
    p = _last["p"]
    scales = {}
    for i in ("1", "2"):
        q, k = p["lambda_q" + i], p["lambda_k" + i]
        e = torch.exp((q * k).sum())
        scales["lambda_q" + i] = (e * k.abs().max() * terms).item()
        scales["lambda_k" + i] = (e * q.abs().max() * terms).item()
    return scales


def lambda_init(options):
    if options.get("lambda_init_rule") == "DEPTH_SCHEDULE":
        return 0.8 - 0.6 * math.exp(-0.3 * (int(options.get("depth", "1")) - 1))
    return float(options.get("lambda_init", "0.8"))


def pairs(z, heads, d):  # (B, L, heads * 2 * d) -> two (B, heads, L, d)
    b, l, _ = z.shape
    z = z.reshape(b, l, heads, 2, d)
    return z[:, :, :, 0].transpose(1, 2), z[:, :, :, 1].transpose(1, 2)


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    d = x.shape[-1] // num_heads
    h = num_heads // 2
    groups = p["w_k.weight"].shape[0] // (2 * d)
    q1, q2 = pairs(linear(x, p, "w_q"), h, d)            # (B, h, T, d) each
    k1, k2 = pairs(linear(memory, p, "w_k"), groups, d)  # (B, G, S, d) each
    b, s, _ = memory.shape
    v = linear(memory, p, "w_v").reshape(b, s, groups, 2 * d).transpose(1, 2)  # (B, G, S, 2d)
    if rotate:
        q1, q2, k1, k2 = rotate(q1), rotate(q2), rotate(k1), rotate(k2)
    k1, k2, v = (z.repeat_interleave(h // groups, dim=1) for z in (k1, k2, v))
    lam0 = lambda_init(options)
    lam = (torch.exp((p["lambda_q1"] * p["lambda_k1"]).sum())
           - torch.exp((p["lambda_q2"] * p["lambda_k2"]).sum()) + lam0)
    a2v = attend(q2, k2, v)                    # (B, h, T, 2d)
    heads = attend(q1, k1, v) - lam * a2v      # (B, h, T, 2d)
    heads.retain_grad()
    _last.update(heads=heads, a2v=a2v, p=p)
    rms = torch.sqrt(heads.pow(2).mean(dim=-1, keepdim=True) + HEAD_NORM_EPS)
    heads = (1 - lam0) * (heads / rms * p["head_norm_scale"])
    return linear(merge_heads(heads), p, "w_o")


if __name__ == "__main__":
    check_layout("differential", [
        {"position": "rope"},
        # GQA (one key/value head for both differential heads) and the
        # paper's depth schedule.
        {"layout_options": "num_kv_heads: 1 lambda_init_rule: DEPTH_SCHEDULE depth: 3",
         "position": "rope", "position_options": "pairing: HALVES"},
    ])
