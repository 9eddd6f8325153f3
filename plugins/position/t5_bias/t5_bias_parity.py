"""T5 relative position bias against PyTorch, from Raffel et al. (2020),
sec. 2.1, with the bucket rule of the paper's released code
(_relative_position_bucket): relative = key - query; a bidirectional stack
gives half the buckets to keys after the query and uses |relative|, a causal
one uses max(-relative, 0); exact buckets below half, log-spaced up to
max_distance, then the last. bias[h, i, j] = table[bucket, h]; the table's
gradient is checked too."""

import math

import torch
from parity import check, check_grads, dump, finish, leaf


def buckets(relative, bidirectional, num_buckets, max_distance):
    result = torch.zeros_like(relative)
    if bidirectional:
        num_buckets //= 2
        result += (relative > 0).long() * num_buckets
        n = relative.abs()
    else:
        n = (-relative).clamp(min=0)
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(n.double() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1)
    return result + torch.where(n < max_exact, n, large)


def main():
    cases = [(0, 0, 5, 5, 32, 128), (1, 0, 4, 6, 32, 128), (0, 7, 2, 40, 8, 20),
             (1, 30, 3, 200, 16, 64), (0, 0, 3, 300, 32, 128)]
    for causal, offset, t, s, num_buckets, max_distance in cases:
        d = dump(kind="position", plugin="t5_bias", hook="bias", causal=causal, d_model=8,
                 num_heads=2, offset=offset, t=t, s=s,
                 options=f"num_buckets: {num_buckets} max_distance: {max_distance}")
        stack = "decoder" if causal else "encoder"
        print(stack, f"queries {offset}..{offset + t - 1}, keys 0..{s - 1},",
              f"{num_buckets} buckets, max distance {max_distance}")
        table = leaf(d[f"param/{stack}.weight"])  # (buckets, H)
        i = torch.arange(offset, offset + t).view(t, 1)
        j = torch.arange(s).view(1, s)
        bucket = buckets(j - i, not causal, num_buckets, max_distance)  # (T, S)
        y = torch.nn.functional.embedding(bucket, table).permute(2, 0, 1).unsqueeze(0)
        check("bias", d["y"], y)
        check_grads(d, y, {f"grad/{stack}.weight": table})
    finish()


if __name__ == "__main__":
    main()
