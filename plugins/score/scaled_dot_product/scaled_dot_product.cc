// Scaled dot-product score (Vaswani et al. 2017): logit = q . k / sqrt(hs).
// Dividing by sqrt(hs) keeps logits at unit variance when q and k have unit
// variance components, so softmax does not saturate as heads get wider.
// A parametrisation that scales attention otherwise (µP's ~1/hs, set by the
// init plugin in dims.attention_scale) replaces 1/sqrt(hs).
//
// Example config (configs/sort_digits.pbtxt):
//   attention { score: "scaled_dot_product" }

#include <cmath>

#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_score.h"
#include "plugins/score/scaled_dot_product/scaled_dot_product.pb.h"

namespace tvlab {
namespace {

class ScaledDotProduct : public AttentionScore {
 public:
  static constexpr uint32_t kCapabilities = kFusableScore;
  static std::unique_ptr<AttentionScore> Create(const ScaledDotProductOptions&,
                                                const ModelDims& dims) {
    return std::make_unique<ScaledDotProduct>(
        dims.attention_scale > 0.0f ? dims.attention_scale
                                    : 1.0f / std::sqrt(static_cast<float>(dims.head_dim)));
  }
  explicit ScaledDotProduct(float scale) : scale_(scale) {}

  Var Logits(const Var& q, const Var& k) const override {
    // (B, H, T, hs) x (B, H, S, hs)^T -> (B, H, T, S)
    return Scale(MatMul(q, k, /*trans_a=*/false, /*trans_b=*/true), scale_);
  }
  // q . k / sqrt(hs): the fused attention kernel computes it (attention_score.h).
  std::optional<float> FusedDotProductScale() const override { return scale_; }

 private:
  float scale_;
};

TVLAB_REGISTER_ATTENTION_SCORE("scaled_dot_product", ScaledDotProduct, ScaledDotProductOptions);

}  // namespace
}  // namespace tvlab
