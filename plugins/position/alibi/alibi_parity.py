"""ALiBi against PyTorch, from Press et al. (2022): the slopes exactly as the
paper's reference get_slopes(), and bias = -m_h * |i - j| with query i at
offset + i."""

import math

import torch
from parity import check, dump, finish


def get_slopes(n):
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + get_slopes(2 * closest)[0::2][: n - closest]


for heads, offset, t, s in [(8, 0, 5, 5), (4, 3, 2, 5), (6, 7, 1, 8), (12, 0, 4, 6)]:
    d = dump(kind="position", plugin="alibi", hook="bias", d_model=heads * 2, num_heads=heads,
             offset=offset, t=t, s=s)
    print(f"heads {heads}, queries at {offset}..{offset + t - 1}, keys 0..{s - 1}")
    m = torch.tensor(get_slopes(heads)).view(1, heads, 1, 1)
    i = torch.arange(offset, offset + t).view(1, 1, t, 1)
    j = torch.arange(s).view(1, 1, 1, s)
    check("bias", d["y"], -m * (i - j).abs())
finish()
