#ifndef TVLAB_PLUGINS_ATTENTION_GQA_GROUPED_QUERY_ATTENTION_H_
#define TVLAB_PLUGINS_ATTENTION_GQA_GROUPED_QUERY_ATTENTION_H_

// Attention whose H query heads share G key/value heads (Ainslie et al.
// 2023). G = H is multi-head attention (Vaswani et al. 2017), 1 < G < H
// grouped-query attention, G = 1 multi-query attention (Shazeer 2019); the
// mha, gqa and mqa layout plugins are this class with their own G, so the
// three differ in nothing else. Query head h reads key/value head
// h / (H / G), as torch's repeat_interleave and Llama's repeat_kv. Shared
// key/value heads are not copied: Attend (framework/attention/attend.h)
// computes each group's logits as one batched product.
//
//   q = x W_q                (H heads of hs)
//   k = m W_k, v = m W_v     (G heads of hs; m = x, or memory for
//                             cross-attention)
//   out = concat_h(attend(q_h, k_g(h), v_g(h))) W_o
//
// Parameter names: w_q, w_k, w_v, w_o (each a Linear; w_k and w_v are
// (G * hs, C)). KV cache per token: "k" and "v", 2 * G * hs numbers.
//
// Not registered itself: the mha, gqa and mqa plugins register it with
// their own G, so this library carries no static initializer.

#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/capabilities.h"
#include "framework/nn/layers.h"

namespace tvlab {

class GroupedQueryAttention : public AttentionLayout {
 public:
  static constexpr uint32_t kCapabilities =
      kAppliesRotaryPositions | kAppliesLogitBias | kAttendsOnceWithNewValues;
  // Requires: kv_heads divides dims.num_heads (checked by the plugins'
  // Validate).
  GroupedQueryAttention(const ModelDims& dims, int64_t kv_heads);

  // -> (B, T, C)
  Var Forward(const AttentionInput& in) const override;
  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const override;

 private:
  ModelDims dims_;
  int64_t kv_heads_;  // G
  nn::Linear *w_q_, *w_k_, *w_v_, *w_o_;
};

}  // namespace tvlab

#endif  // TVLAB_PLUGINS_ATTENTION_GQA_GROUPED_QUERY_ATTENTION_H_
