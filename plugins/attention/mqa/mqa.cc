// Multi-query attention (Shazeer 2019, "Fast Transformer Decoding: One
// Write-Head is All You Need"): H query heads read one shared key/value
// head. The KV cache is H times smaller than MHA's; grouped-query attention
// with G = 1.
//
//   q = x W_q (H heads), k = m W_k, v = m W_v (one head), m = x or memory
//   out = concat_h(attend(q_h, k, v)) W_o
//
// KV cache per token per layer: 2 * hs numbers.
//
// Example config (configs/sort_digits_mqa.pbtxt):
//   attention { layout: "mqa" }

#include "framework/interfaces/attention_layout.h"
#include "plugins/attention/gqa/grouped_query_attention.h"
#include "plugins/attention/mqa/mqa.pb.h"

namespace tvlab {
namespace {

class Mqa : public GroupedQueryAttention {
 public:
  static std::unique_ptr<AttentionLayout> Create(const MqaOptions&, const ModelDims& dims) {
    return std::make_unique<Mqa>(dims);
  }
  explicit Mqa(const ModelDims& dims) : GroupedQueryAttention(dims, /*kv_heads=*/1) {}
};

TVLAB_REGISTER_ATTENTION_LAYOUT("mqa", Mqa, MqaOptions);

}  // namespace
}  // namespace tvlab
