"""Multi-head attention against PyTorch, Vaswani et al. (2017), section 3.2.2:
head_i = Attention(x W_i^Q, m W_i^K, m W_i^V) for H heads of C/H columns
each, y = Concat(head_1..head_H) W^O (with biases when model.bias)."""

from attention_parity import check_layout, linear, merge_heads, split_heads


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    q = split_heads(linear(x, p, "w_q"), num_heads)       # (B, H, T, hs)
    k = split_heads(linear(memory, p, "w_k"), num_heads)  # (B, H, S, hs)
    v = split_heads(linear(memory, p, "w_v"), num_heads)  # (B, H, S, hs)
    if rotate:
        q, k = rotate(q), rotate(k)
    return linear(merge_heads(attend(q, k, v)), p, "w_o")


if __name__ == "__main__":
    check_layout("mha", [{"position": "rope"}])
