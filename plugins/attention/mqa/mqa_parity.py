"""Multi-query attention against PyTorch, Shazeer (2019), "Fast Transformer
Decoding": H query heads, one key head and one value head (C/H columns each)
that every query head reads; y = Concat(heads) W^O."""

from attention_parity import check_layout, linear, merge_heads, split_heads


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    q = split_heads(linear(x, p, "w_q"), num_heads)  # (B, H, T, hs)
    k = linear(memory, p, "w_k")[:, None]             # (B, 1, S, hs)
    v = linear(memory, p, "w_v")[:, None]             # (B, 1, S, hs)
    if rotate:
        q, k = rotate(q), rotate(k)
    shape = (-1, num_heads, -1, -1)
    return linear(merge_heads(attend(q, k.expand(*shape), v.expand(*shape))), p, "w_o")


if __name__ == "__main__":
    check_layout("mqa", [{"position": "rope"}])
