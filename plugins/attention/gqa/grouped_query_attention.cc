#include "plugins/attention/gqa/grouped_query_attention.h"

#include "framework/attention/attend.h"
#include "framework/attention/heads.h"
#include "framework/core/check.h"

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
  const Var& source = in.memory.defined() ? in.memory : in.x;  // (B, S, C); new tokens with a self cache
  if (in.cache == nullptr) {  // every token's heads side by side: no permutes where the kernel reads them so
    const Var q = SplitTokenHeads(w_q_->Forward(in.x), dims_.num_heads);  // (B, T, H, hs)
    const Var k = SplitTokenHeads(w_k_->Forward(source), kv_heads_);      // (B, S, G, hs)
    const Var v = SplitTokenHeads(w_v_->Forward(source), kv_heads_);      // (B, S, G, hs)
    Var heads = AttendTokenMajor(q, k, v, ContextFor(in, *this, dims_.dropout));  // (B, T, H, hs)
    return w_o_->Forward(MergeTokenHeads(heads));                                  // (B, T, C)
  }
  Var q = SplitHeads(w_q_->Forward(in.x), dims_.num_heads);      // (B, H, T, hs)
  // Attend rotates q and the new keys (self-attention), caches k and v, and
  // lets each query head read its group's key/value head.
  Var heads = Attend(
      q, [&] { return SplitHeads(w_k_->Forward(source), kv_heads_); },  // (B, G, S_new, hs)
      [&] { return SplitHeads(w_v_->Forward(source), kv_heads_); },     // (B, G, S_new, hs)
      ContextFor(in, *this, dims_.dropout));                             // (B, H, T, hs)
  return w_o_->Forward(MergeHeads(heads));  // (B, T, C)
}

int64_t GroupedQueryAttention::KvCacheBytesPerToken(int64_t bytes_per_element) const {
  return 2 * kv_heads_ * dims_.head_dim * bytes_per_element;  // k and v
}

}  // namespace tvlab
