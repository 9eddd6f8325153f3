// RMSNorm (Zhang & Sennrich 2019): y = x / sqrt(mean(x^2) + eps) * gamma over
// the model width. No mean subtraction and no shift (beta): a learned scale
// only, as in T5 and Llama. The fused Backend::Normalize kernel with
// subtract_mean = false, with its own backward.
//
// Example config (configs/sort_digits_rmsnorm.pbtxt):
//   norm { plugin: "rmsnorm" options { [type.googleapis.com/tvlab.RmsNormOptions] { eps: 1e-6 } } }

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/normalization.h"
#include "plugins/norm/rmsnorm/rmsnorm.pb.h"

namespace tvlab {
namespace {

class RmsNorm : public Normalization {
 public:
  static absl::Status Validate(const RmsNormOptions& options, const ModelDims&) {
    if (!(options.eps() > 0.0f)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.eps must be > 0 (got ", options.eps(), "); it keeps 1/rms finite, e.g. 1e-6"));
    }
    return absl::OkStatus();
  }
  static std::unique_ptr<Normalization> Create(const RmsNormOptions& options,
                                               const ModelDims& dims) {
    return std::make_unique<RmsNorm>(options.eps(), dims.d_model);
  }

  RmsNorm(float eps, int64_t width) : eps_(eps) {
    gamma_ = AddParameter("weight", {width}, Init::Ones());  // (C)
  }

  Var Forward(const Var& x) const override {
    return Normalize(x, gamma_, Var(), eps_, /*subtract_mean=*/false);  // (..., C)
  }

 private:
  float eps_;
  Var gamma_;
};

TVLAB_REGISTER_NORMALIZATION("rmsnorm", RmsNorm, RmsNormOptions);

}  // namespace
}  // namespace tvlab
