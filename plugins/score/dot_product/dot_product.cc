// Dot-product score (Luong et al. 2015, "dot"): logit = q . k, unscaled.
// The ablation of scaled_dot_product's 1/sqrt(hs): logits grow with the head
// width, so softmax saturates sooner as heads get wider.
//
// Example config (configs/sort_digits_dot_product.pbtxt):
//   attention { score: "dot_product" }

#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_score.h"
#include "plugins/score/dot_product/dot_product.pb.h"

namespace tvlab {
namespace {

class DotProduct : public AttentionScore {
 public:
  static constexpr uint32_t kCapabilities = kFusableScore;
  static std::unique_ptr<AttentionScore> Create(const DotProductOptions&, const ModelDims&) {
    return std::make_unique<DotProduct>();
  }

  Var Logits(const Var& q, const Var& k) const override {
    return MatMul(q, k, /*trans_a=*/false, /*trans_b=*/true);  // (B, H, T, hs) x (B, H, S, hs)^T -> (B, H, T, S)
  }
  // q . k: the fused attention kernel computes it (attention_score.h).
  std::optional<float> FusedDotProductScale() const override { return 1.0f; }
};

TVLAB_REGISTER_ATTENTION_SCORE("dot_product", DotProduct, DotProductOptions);

}  // namespace
}  // namespace tvlab
