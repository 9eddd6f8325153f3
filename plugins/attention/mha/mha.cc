// Multi-head attention (Vaswani et al. 2017): H query heads and H key/value
// heads, each of size hs = C / H.
//
//   q = x W_q, k = m W_k, v = m W_v          (m = x, or the memory for
//   out = concat_h(attend(q_h, k_h, v_h)) W_o  cross-attention)
//
// KV cache per token per layer: k and v of every head, 2 * H * hs numbers.
// Shares its code with gqa and mqa (plugins/attention/gqa/grouped_query_attention.h).
//
// Example config (configs/sort_digits.pbtxt):
//   attention { layout: "mha" }

#include "framework/interfaces/attention_layout.h"
#include "plugins/attention/gqa/grouped_query_attention.h"
#include "plugins/attention/mha/mha.pb.h"

namespace tvlab {
namespace {

class Mha : public GroupedQueryAttention {
 public:
  static std::unique_ptr<AttentionLayout> Create(const MhaOptions&, const ModelDims& dims) {
    return std::make_unique<Mha>(dims);
  }
  explicit Mha(const ModelDims& dims) : GroupedQueryAttention(dims, dims.num_heads) {}
};

TVLAB_REGISTER_ATTENTION_LAYOUT("mha", Mha, MhaOptions);

}  // namespace
}  // namespace tvlab
