#include "framework/model/grouped_query_attention.h"

#include "framework/autograd/ops.h"
#include "framework/core/check.h"
#include "framework/model/attention_core.h"

namespace tvlab {

GroupedQueryAttention::GroupedQueryAttention(const ModelDims& dims, int64_t kv_heads)
    : dims_(dims), kv_heads_(kv_heads) {
  TVLAB_CHECK(kv_heads > 0 && dims.num_heads % kv_heads == 0)
      << kv_heads << " key/value heads for " << dims.num_heads << " query heads";
  const int64_t c = dims.d_model, kv_width = kv_heads * dims.head_dim;
  w_q_ = AddChild("w_q", std::make_unique<nn::Linear>(c, c, dims.bias));
  w_k_ = AddChild("w_k", std::make_unique<nn::Linear>(c, kv_width, dims.bias));
  w_v_ = AddChild("w_v", std::make_unique<nn::Linear>(c, kv_width, dims.bias));
  w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(c, c, dims.bias));
}

Var GroupedQueryAttention::Forward(const AttentionInput& in) const {
  const bool self = !in.memory.defined();
  const Var& source = self ? in.x : in.memory;  // (B, S, C); S = new tokens with a self cache
  // Rotary positions act on self-attention only: in cross-attention queries
  // and keys come from different sequences.
  const bool rotate = self && in.position != nullptr;
  Var q = SplitHeads(w_q_->Forward(in.x), dims_.num_heads);  // (B, H, T, hs)
  if (rotate) q = in.position->RotateQueryOrKey(q, in.position_offset);
  Var k = KeyState(in, "k", /*token_dim=*/2, [&] {
    Var fresh = SplitHeads(w_k_->Forward(source), kv_heads_);  // (B, G, S, hs)
    return rotate ? in.position->RotateQueryOrKey(fresh, in.position_offset) : fresh;
  });  // (B, G, S, hs), S = every key
  Var v = KeyState(in, "v", /*token_dim=*/2, [&] {
    return SplitHeads(w_v_->Forward(source), kv_heads_);  // (B, G, S, hs)
  });
  const int64_t group = dims_.num_heads / kv_heads_;  // query heads per key/value head
  Var heads = Attend(q, RepeatHeads(k, group), RepeatHeads(v, group), in, *this,
                     dims_.dropout);        // (B, H, T, hs)
  return w_o_->Forward(MergeHeads(heads));  // (B, T, C)
}

int64_t GroupedQueryAttention::KvCacheBytesPerToken(int64_t bytes_per_element) const {
  return 2 * kv_heads_ * dims_.head_dim * bytes_per_element;  // k and v
}

}  // namespace tvlab
