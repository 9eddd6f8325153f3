// ReGLU FFN (Shazeer 2020, "GLU Variants Improve Transformer", eq. 6's
// ReGLU, with biases as an option):
//   y = (relu(x W_1 + b_1) * (x W_3 + b_3)) W_2 + b_2
//   W_1 (F, C) the gate (through ReLU), W_3 (F, C) the linear branch,
//   W_2 (C, F) the down projection.
// The same three matrices, names (w_1, w_3, w_2) and width rule as swiglu
// and geglu, so the three differ only in the gate's activation: F =
// model.d_ff, or when that is 0, int(2 * 4 * d_model / 3) rounded up to
// options.multiple_of (equal parameters with a 4 * d_model two-matrix FFN).
// Biases follow model.bias.
//
// Example config (configs/sort_digits_reglu.pbtxt):
//   ffn { plugin: "reglu" }

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/ffn.h"
#include "framework/nn/layers.h"
#include "plugins/ffn/reglu/reglu.pb.h"

namespace tvlab {
namespace {

class RegluFfn : public Ffn {
 public:
  static absl::Status Validate(const RegluFfnOptions& options, const ModelDims&) {
    if (options.multiple_of() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.multiple_of must be >= 1 (got ", options.multiple_of(),
          "); the default hidden width is rounded up to a multiple of it, e.g. 4"));
    }
    return absl::OkStatus();
  }
  // model.d_ff 0 resolves to the width used (written to spec.resolved.pbtxt).
  static void Resolve(RegluFfnOptions* options, ModelDims* dims) {
    dims->d_ff = HiddenWidth(*dims, options->multiple_of());
  }
  static std::unique_ptr<Ffn> Create(const RegluFfnOptions& options, const ModelDims& dims) {
    return std::make_unique<RegluFfn>(options, dims);
  }

  // model.d_ff, or int(2/3 * 4 * C) rounded up to `multiple_of`.
  static int64_t HiddenWidth(const ModelDims& dims, int64_t multiple_of) {
    if (dims.d_ff > 0) return dims.d_ff;
    const int64_t two_thirds = 2 * (4 * dims.d_model) / 3;
    return (two_thirds + multiple_of - 1) / multiple_of * multiple_of;
  }

  RegluFfn(const RegluFfnOptions& options, const ModelDims& dims) : dropout_(dims.dropout) {
    const int64_t width = HiddenWidth(dims, options.multiple_of());
    w_1_ = AddChild("w_1", std::make_unique<nn::Linear>(dims.d_model, width, dims.bias));
    w_3_ = AddChild("w_3", std::make_unique<nn::Linear>(dims.d_model, width, dims.bias));
    w_2_ = AddChild("w_2", std::make_unique<nn::Linear>(width, dims.d_model, dims.bias));
  }

  Var Forward(const Var& x, const ForwardContext& ctx) const override {
    Var h = Mul(Relu(w_1_->Forward(x)), w_3_->Forward(x));  // (B, T, F)
    if (ctx.training && dropout_ > 0.0f) h = Dropout(h, dropout_, DropoutStream(ctx, "hidden"));
    return w_2_->Forward(h);  // (B, T, C)
  }

 private:
  float dropout_;
  nn::Linear *w_1_, *w_3_, *w_2_;
};

TVLAB_REGISTER_FFN("reglu", RegluFfn, RegluFfnOptions);

}  // namespace
}  // namespace tvlab
