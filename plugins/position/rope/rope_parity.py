"""RoPE against PyTorch, written from Su et al. (2021), RoFormer, eq. 34:
pairs of coordinates turn by m * theta_i, theta_i = base^(-2i/d).
INTERLEAVED is computed as Meta's Llama does it, with complex numbers:
(x[2i] + j x[2i+1]) * e^(j m theta_i). HALVES is GPT-NeoX's rotate_half:
x cos + rotate_half(x) sin with the angles repeated over the two halves.

Partial rotary as GPT-NeoX's rotary_pct: the first int(pct * d) coordinates
(even) are rotated with frequencies over that width, the rest concatenated
back. Scaling as the papers give the inverse frequencies: position
interpolation (Chen et al. 2023) divides them by s; NTK-aware (bloc97)
raises the base to base * s^(d / (d - 2)); YaRN (Peng et al. 2023, sec. 3.2
and 3.4) blends interpolated and original frequencies by a ramp over the
number of turns r = L / wavelength, gamma(r) = 0 below beta_slow turns and 1
above beta_fast, and scales q, k by sqrt(1/t) = 0.1 ln s + 1; Llama 3.1
blends by wavelength bands. Written here in frequency space, independently of
the C++ (which works with pair indices)."""

import math

import torch
from parity import check, check_grads, dump, finish, leaf


def angles(d, positions, base):
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2)
    return torch.outer(positions.to(torch.float64), theta)  # (T, d/2)


def scaled_inv_freq(d, base, scaling):
    """Inverse frequencies (d/2) of a d-wide rotated part under `scaling`
    (a dict: method, factor, original, low, high, beta_fast, beta_slow)."""
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    method, s = scaling.get("method", "NONE"), float(scaling.get("factor", 8.0))
    if method == "LINEAR":
        return inv / s
    if method == "NTK":
        return (base * s ** (d / (d - 2))) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    if method == "NONE":
        return inv
    wavelength = 2 * math.pi / inv
    original = float(scaling["original"])
    if method == "LLAMA3":
        low, high = float(scaling.get("low", 1.0)), float(scaling.get("high", 4.0))
        smooth = ((original / wavelength - low) / (high - low)).clamp(0, 1)
        return (1 - smooth) * inv / s + smooth * inv
    if method == "YARN":
        # Pair i turns r_i = L / wavelength_i times; the ramp edges in pair
        # index are where r = beta (floored / ceiled), as the paper's code.
        fast, slow = float(scaling.get("beta_fast", 32.0)), float(scaling.get("beta_slow", 1.0))
        edge = lambda r: d * math.log(original / (r * 2 * math.pi)) / (2 * math.log(base))
        lo, hi = max(math.floor(edge(fast)), 0), min(math.ceil(edge(slow)), d - 1)
        hi = hi + 0.001 if lo == hi else hi
        gamma = 1 - ((torch.arange(d // 2, dtype=torch.float64) - lo) / (hi - lo)).clamp(0, 1)
        return inv / s * (1 - gamma) + inv * gamma
    raise ValueError(f"unknown scaling method {method}")


def rope_complex(x, offset, inv, gain=1.0):
    t, d = x.shape[-2], x.shape[-1]
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    a = torch.outer(torch.arange(offset, offset + t, dtype=torch.float64), inv)
    rotated = z * torch.polar(torch.full_like(a, gain), a)
    return torch.view_as_real(rotated).reshape(x.shape)


def rope_rotate_half(x, offset, inv, gain=1.0):
    t, d = x.shape[-2], x.shape[-1]
    a = torch.outer(torch.arange(offset, offset + t, dtype=torch.float64), inv)
    a = torch.cat([a, a], dim=-1)  # (T, d)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return (x * torch.cos(a) + torch.cat([-x2, x1], dim=-1) * torch.sin(a)) * gain


def rotate(x, offset, options):
    """The formula the attention parity scripts apply to q and k (see
    framework/testing/attention_parity.py): x (..., T, D) at positions
    offset, offset + 1, ..., with options {"base": ..., "pairing": ...,
    "fraction": ..., "scaling": {...}}."""
    base = float(options.get("base", 10000.0))
    d = x.shape[-1]
    rot = int(d * float(options.get("fraction", 1.0))) // 2 * 2
    scaling = options.get("scaling", {})
    inv = scaled_inv_freq(rot, base, scaling)
    gain = 1.0
    if scaling.get("method") == "YARN":
        gain = scaling.get("attention_factor", 0.1 * math.log(float(scaling.get("factor", 8.0))) + 1)
    turn = rope_rotate_half if options.get("pairing", "INTERLEAVED") == "HALVES" else rope_complex
    return torch.cat([turn(x[..., :rot], offset, inv, gain), x[..., rot:]], dim=-1)


def scaling_text(scaling):
    names = {"original": "original_max_positions", "low": "low_freq_factor",
             "high": "high_freq_factor"}
    fields = " ".join(f"{names.get(k, k)}: {v}" for k, v in scaling.items())
    return f"scaling {{ {fields} }}"


SCALED = [("HALVES", 0.5, {}, "2,2,5,16"), ("INTERLEAVED", 0.25, {}, "1,2,3,16"),
          ("HALVES", 1.0, {"method": "LINEAR", "factor": 4.0}, "1,2,5,16"),
          ("INTERLEAVED", 1.0, {"method": "NTK", "factor": 8.0}, "1,2,5,16"),
          ("HALVES", 1.0, {"method": "YARN", "factor": 4.0, "original": 64}, "1,2,5,16"),
          ("HALVES", 0.5, {"method": "YARN", "factor": 16.0, "original": 2048,
                           "beta_fast": 16.0, "beta_slow": 2.0}, "1,1,3,16"),
          ("INTERLEAVED", 1.0, {"method": "LLAMA3", "factor": 8.0, "original": 64}, "1,2,5,16")]


def check_scaled():
    for pairing, fraction, scaling, shape in SCALED:
        options = f"pairing: {pairing} rotary_fraction: {fraction}"
        if scaling:
            options += " " + scaling_text(scaling)
        d = dump(kind="position", plugin="rope", hook="rotate", options=options, d_model=32,
                 num_heads=2, offset=900, shape=shape)
        print(options)
        x = leaf(d["x"])
        y = rotate(x, 900, {"pairing": pairing, "fraction": fraction, "scaling": scaling})
        check("y", d["y"], y)
        check_grads(d, y, {"dx": x})


def main():
    cases = [("INTERLEAVED", 10000.0, 0, "2,2,5,8"), ("INTERLEAVED", 100.0, 7, "1,3,4,6"),
             ("HALVES", 10000.0, 3, "2,2,5,8"), ("INTERLEAVED", 10000.0, 1000, "1,2,3,16"),
             ("HALVES", 500000.0, 11, "2,6,4")]  # a rank-3 input, as MLA's shared rope key
    for pairing, base, offset, shape in cases:
        d = dump(kind="position", plugin="rope", hook="rotate",
                 options=f"base: {base} pairing: {pairing}", d_model=16, num_heads=2,
                 offset=offset, shape=shape)
        print(pairing, "base", base, "offset", offset, "shape", shape)
        x = leaf(d["x"])
        y = rotate(x, offset, {"base": base, "pairing": pairing})
        check("y", d["y"], y)
        check_grads(d, y, {"dx": x})
    check_scaled()
    finish()


if __name__ == "__main__":
    main()
