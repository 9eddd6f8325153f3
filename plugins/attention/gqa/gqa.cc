// Grouped-query attention (Ainslie et al. 2023): H query heads share G
// key/value heads, each group of H / G consecutive query heads reading one
// (query head h reads key/value head h / (H / G)). The KV cache shrinks by
// H / G against MHA; the queries stay distinct, so heads of a group still
// weight the keys differently.
//
//   q = x W_q (H heads), k = m W_k, v = m W_v (G heads), m = x or memory
//   out = concat_h(attend(q_h, k_g(h), v_g(h))) W_o
//
// KV cache per token per layer: 2 * G * hs numbers.
//
// Example config (configs/sort_digits_gqa.pbtxt):
//   attention {
//     layout: "gqa"
//     layout_options { [type.googleapis.com/tvlab.GqaOptions] { num_kv_heads: 2 } }
//   }

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/interfaces/attention_layout.h"
#include "plugins/attention/gqa/grouped_query_attention.h"
#include "plugins/attention/gqa/gqa.pb.h"

namespace tvlab {
namespace {

int64_t KvHeads(const GqaOptions& options, const ModelDims& dims) {
  return options.num_kv_heads() > 0 ? options.num_kv_heads() : dims.num_heads / 2;
}

class Gqa : public GroupedQueryAttention {
 public:
  // The resolved spec records the key/value heads used.
  static void Resolve(GqaOptions* options, ModelDims* dims) {
    options->set_num_kv_heads(static_cast<int32_t>(KvHeads(*options, *dims)));
  }
  static absl::Status Validate(const GqaOptions& options, const ModelDims& dims) {
    std::vector<int64_t> divisors;
    for (int64_t g = 1; g <= dims.num_heads; ++g)
      if (dims.num_heads % g == 0) divisors.push_back(g);
    const std::string fix = absl::StrCat("set num_kv_heads to a divisor of model.num_heads (",
                                         dims.num_heads, "): ", absl::StrJoin(divisors, ", "));
    if (options.num_kv_heads() < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("num_kv_heads must be >= 0 (got ", options.num_kv_heads(), "); ", fix));
    if (options.num_kv_heads() == 0 && dims.num_heads % 2 != 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "num_kv_heads 0 means num_heads / 2, but model.num_heads is ", dims.num_heads,
          " (odd); ", fix));
    const int64_t g = KvHeads(options, dims);
    if (dims.num_heads % g != 0)
      return absl::InvalidArgumentError(absl::StrCat("num_kv_heads ", g,
                                                     " does not divide model.num_heads ",
                                                     dims.num_heads, "; ", fix));
    return absl::OkStatus();
  }
  static std::unique_ptr<AttentionLayout> Create(const GqaOptions& options,
                                                 const ModelDims& dims) {
    return std::make_unique<Gqa>(dims, KvHeads(options, dims));
  }
  Gqa(const ModelDims& dims, int64_t kv_heads) : GroupedQueryAttention(dims, kv_heads) {}
};

TVLAB_REGISTER_ATTENTION_LAYOUT("gqa", Gqa, GqaOptions);

}  // namespace
}  // namespace tvlab
