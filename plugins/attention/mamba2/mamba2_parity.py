"""Mamba-2's SSD layer against PyTorch, Dao and Gu (2024), §7 / the reference
Mamba2 block, written as the SSM recurrence one token at a time (the decay
exp(dt A) in linear space, the conv as torch's grouped conv1d):
  [z, xBC, dt] = x W_in;  xBC = silu(conv1d_depthwise(xBC, pad d_conv - 1)[:T])
  [x, B, C] = xBC;  dt = softplus(dt + dt_bias);  A = -exp(A_log)
  h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t^T   (per head, B from its group)
  y_t = C_t h_t + D x_t;   out = (rmsnorm_group(y * silu(z)) * w) W_o."""

import torch

from attention_parity import check_mixer, linear

EPS = 1e-5
_last = {}  # the last layer() call's intermediates, for gradient_scales()


def gradient_scales():
    """The size of the terms of a_log's and D's gradients, after backward.

    With one head per norm group (ngroups = heads) the gated RMSNorm makes
    the loss invariant to each head's scale, and at the initial dt (<= 0.1)
    y is mostly D x: d loss / d D_h = sum (d loss / d y) x nearly cancels,
    and so does d loss / d A_log_h = sum_t (dt A)_t sum (d loss / d h_t)
    exp(dt A)_t h_{t-1}. float32 keeps ~1e-5 of such a result; their terms'
    size is the sum of the terms' absolute values (max over heads)."""
    x, y = _last["x"], _last["y"]  # (B, T, H, P)
    d_terms = (y.grad * x).abs().sum(dim=(0, 1, 3))  # (H)
    a_terms = 0.0
    for dta, decay, before, after in _last["steps"]:  # (B, H), (B, H), (B, H, N, P) x 2
        inner = (after.grad * before).abs().sum(dim=(2, 3)) * decay  # (B, H)
        a_terms = a_terms + (dta.abs() * inner).sum(dim=0)  # (H)
    return {"d": d_terms.max().item(), "a_log": a_terms.max().item()}


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    bsz, t, c = x.shape
    n = int(options.get("d_state", "16"))
    kernel = int(options.get("d_conv", "4"))
    d_in = int(options.get("expand", "2")) * c
    headdim = int(options.get("headdim", "0")) or c // num_heads
    groups = int(options.get("ngroups", "1"))
    h = d_in // headdim
    zxbcdt = linear(x, p, "in_proj")  # (B, T, 2 d_in + 2 G N + H)
    z, xbc, dt = torch.split(zxbcdt, [d_in, d_in + 2 * groups * n, h], dim=-1)
    conv_dim = xbc.shape[-1]
    xbc = torch.nn.functional.conv1d(xbc.transpose(1, 2), p["conv_weight"].reshape(conv_dim, 1, kernel),
                                     p["conv_bias"], padding=kernel - 1, groups=conv_dim)[..., :t]
    xbc = torch.nn.functional.silu(xbc.transpose(1, 2))  # (B, T, conv_dim)
    xs, bs, cs = torch.split(xbc, [d_in, groups * n, groups * n], dim=-1)
    xs = xs.reshape(bsz, t, h, headdim)
    bs = bs.reshape(bsz, t, groups, n)
    cs = cs.reshape(bsz, t, groups, n)
    group_of = torch.arange(h) // (h // groups)  # head -> its group
    dt = torch.nn.functional.softplus(dt + p["dt_bias"])  # (B, T, H)
    a = -torch.exp(p["a_log"])  # (H)
    dta = dt * a  # (B, T, H): the log-decays
    state = torch.zeros(bsz, h, n, headdim, dtype=x.dtype)
    ys, steps = [], []
    for i in range(t):
        decay = torch.exp(dta[:, i])  # (B, H)
        bt, ct = bs[:, i, group_of], cs[:, i, group_of]  # (B, H, N)
        before = state
        state = decay[:, :, None, None] * state + dt[:, i, :, None, None] * bt[..., None] * xs[:, i, :, None, :]
        state.retain_grad()
        steps.append((dta[:, i].detach(), decay.detach(), before.detach(), state))
        ys.append(torch.einsum("bhn,bhnp->bhp", ct, state) + p["d"][None, :, None] * xs[:, i])
    y = torch.stack(ys, dim=1)  # (B, T, H, P)
    y.retain_grad()
    _last.update(x=xs.detach(), y=y, steps=steps)
    y = y.reshape(bsz, t, d_in) * torch.nn.functional.silu(z)
    y = y.reshape(bsz, t, groups, d_in // groups)
    y = (y * torch.rsqrt((y * y).mean(-1, keepdim=True) + EPS)).reshape(bsz, t, d_in) * p["norm_weight"]
    return linear(y, p, "w_o")


if __name__ == "__main__":
    check_mixer("mamba2", [
        {"layout_options": "chunk_size: 2"},
        {"layout_options": "chunk_size: 3 d_state: 4 d_conv: 3 expand: 1 headdim: 4 ngroups: 2"},
        {"layout_options": "chunk_size: 3 d_state: 4 d_conv: 3 expand: 1 headdim: 8 ngroups: 2"},
        {"layout_options": "chunk_size: 2 d_conv: 1 ngroups: 4 headdim: 2 expand: 1"},
    ])
