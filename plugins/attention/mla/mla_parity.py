"""Multi-head latent attention against PyTorch, DeepSeek-V2 (2024), section
2.1, eqs. 9-11 (the key/value latent) and 12-18 (decoupled RoPE):
  c = m W_DKV; k_C = c W_UK; v = c W_UV; k_R = RoPE(m W_KR), one head shared
  by all; c_q = x W_DQ (if there is a query latent, else x);
  q_C = c_q W_UQ; q_R = RoPE(c_q W_QR); q = [q_C; q_R], k = [k_C; k_R];
  y = Concat(heads) W^O.
Which parts exist is read from the parameters (w_dq: a query latent; w_kr:
a rotary part)."""

import torch

from attention_parity import check_layout, linear, merge_heads, split_heads

# Only the decoupled part of each head is rotated, here, before attend: the
# attention options' QK-norm then acts on the assembled heads
# (framework/testing/attention_options_parity.py).
ROTATES_PART_OF_EACH_HEAD = True


def layer(p, x, memory, num_heads, options, rotate, attend):  # -> (B, T, C)
    c = linear(memory, p, "w_dkv")                          # (B, S, d_c)
    k = split_heads(linear(c, p, "w_uk"), num_heads)        # (B, H, S, hs)
    v = split_heads(linear(c, p, "w_uv"), num_heads)        # (B, H, S, hs)
    cq = linear(x, p, "w_dq") if "w_dq.weight" in p else x  # (B, T, d_c') or x
    q = split_heads(linear(cq, p, "w_uq"), num_heads)       # (B, H, T, hs)
    if "w_kr.weight" in p:
        k_rope = linear(memory, p, "w_kr")[:, None]           # (B, 1, S, d_r), one head for all
        q_rope = split_heads(linear(cq, p, "w_qr"), num_heads)  # (B, H, T, d_r)
        if rotate:
            q_rope, k_rope = rotate(q_rope), rotate(k_rope)
        q = torch.cat([q, q_rope], dim=-1)                                # (B, H, T, hs + d_r)
        k = torch.cat([k, k_rope.expand(-1, num_heads, -1, -1)], dim=-1)  # (B, H, S, hs + d_r)
    return linear(merge_heads(attend(q, k, v)), p, "w_o")


if __name__ == "__main__":
    check_layout("mla", [
        {"position": "rope"},
        # A query latent, an explicit latent and rope size, the other rope
        # pairing, and an additive score of its own width.
        {"layout_options": "kv_latent_dim: 10 rope_head_dim: 2 q_latent_dim: 6",
         "score": "additive", "score_options": "hidden_size: 5",
         "position": "rope", "position_options": "pairing: HALVES"},
    ])
