// LayerNorm (Ba et al. 2016): y = (x - mean) / sqrt(var + eps) * gamma + beta
// over the model width, as torch.nn.LayerNorm. A fused kernel with its own
// backward (Backend::Normalize).
//
// Example config (configs/sort_digits.pbtxt):
//   norm { plugin: "layernorm" options { [type.googleapis.com/tvlab.LayerNormOptions] { eps: 1e-6 } } }

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/normalization.h"
#include "plugins/norm/layernorm/layernorm.pb.h"

namespace tvlab {
namespace {

class LayerNorm : public Normalization {
 public:
  static absl::Status Validate(const LayerNormOptions& options, const ModelDims&) {
    if (!(options.eps() > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("options.eps must be > 0 (got ", options.eps(), ")"));
    }
    return absl::OkStatus();
  }
  static std::unique_ptr<Normalization> Create(const LayerNormOptions& options,
                                               const ModelDims& dims) {
    return std::make_unique<LayerNorm>(options, dims.d_model);
  }

  LayerNorm(const LayerNormOptions& options, int64_t width) : eps_(options.eps()) {
    gamma_ = AddParameter("weight", {width}, Init::Ones());
    if (options.bias()) beta_ = AddParameter("bias", {width}, Init::Zeros());
  }

  Var Forward(const Var& x) const override {
    return Normalize(x, gamma_, beta_, eps_, /*subtract_mean=*/true);  // (..., C)
  }

 private:
  float eps_;
  Var gamma_, beta_;
};

TVLAB_REGISTER_NORMALIZATION("layernorm", LayerNorm, LayerNormOptions);

}  // namespace
}  // namespace tvlab
