"""Grouped-query attention against PyTorch, Ainslie et al. (2023): H query
heads in G groups, one key/value head per group; query head h reads group
h // (H / G) (torch.repeat_interleave, as Llama's repeat_kv). G is read from
w_k's rows (G * head size)."""

from attention_parity import check_layout, linear, merge_heads, split_heads


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    head_size = x.shape[-1] // num_heads
    groups = p["w_k.weight"].shape[0] // head_size
    q = split_heads(linear(x, p, "w_q"), num_heads)    # (B, H, T, hs)
    k = split_heads(linear(memory, p, "w_k"), groups)  # (B, G, S, hs)
    v = split_heads(linear(memory, p, "w_v"), groups)  # (B, G, S, hs)
    if rotate:
        q, k = rotate(q), rotate(k)
    k = k.repeat_interleave(num_heads // groups, dim=1)  # (B, H, S, hs)
    v = v.repeat_interleave(num_heads // groups, dim=1)
    return linear(merge_heads(attend(q, k, v)), p, "w_o")


if __name__ == "__main__":
    check_layout("gqa", [{"position": "rope"},
                         # G = 1 through gqa's own option
                         {"layout_options": "num_kv_heads: 1", "score": "dot_product"}])
