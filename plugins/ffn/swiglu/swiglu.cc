// SwiGLU FFN (Shazeer 2020, "GLU Variants Improve Transformer"; PaLM, Llama):
//   y = (silu(x W_1 + b_1) * (x W_3 + b_3)) W_2 + b_2
//   W_1 (F, C) the gate (through SiLU), W_3 (F, C) the linear "up" branch,
//   W_2 (C, F) the down projection; silu(z) = z * sigmoid(z).
// Names as Meta's Llama code (w1, w3, w2; Hugging Face calls them gate_proj,
// up_proj, down_proj). Three matrices, so to keep the parameter count of a
// 4*d ReLU FFN the hidden width is about 8/3 * d_model: F = model.d_ff, or
// when that is 0, int(2 * 4 * d_model / 3) rounded up to options.multiple_of.
// Biases follow model.bias (Llama: model { bias: false }).
//
// Example config (configs/sort_digits_swiglu.pbtxt):
//   ffn { plugin: "swiglu" options { [type.googleapis.com/tvlab.SwigluFfnOptions] { multiple_of: 4 } } }

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/ffn.h"
#include "framework/nn/layers.h"
#include "plugins/ffn/swiglu/swiglu.pb.h"

namespace tvlab {
namespace {

class SwigluFfn : public Ffn {
 public:
  static absl::Status Validate(const SwigluFfnOptions& options, const ModelDims&) {
    if (options.multiple_of() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.multiple_of must be >= 1 (got ", options.multiple_of(),
          "); the default hidden width is rounded up to a multiple of it, e.g. 4 or 256"));
    }
    return absl::OkStatus();
  }
  // model.d_ff 0 resolves to the width used.
  static void Resolve(SwigluFfnOptions* options, ModelDims* dims) {
    dims->d_ff = HiddenWidth(*dims, options->multiple_of());
  }
  static std::unique_ptr<Ffn> Create(const SwigluFfnOptions& options, const ModelDims& dims) {
    return std::make_unique<SwigluFfn>(dims, HiddenWidth(dims, options.multiple_of()));
  }

  // model.d_ff, or Llama's rule: int(2/3 * 4 * C) rounded up to `multiple_of`.
  static int64_t HiddenWidth(const ModelDims& dims, int64_t multiple_of) {
    if (dims.d_ff > 0) return dims.d_ff;
    const int64_t two_thirds = 2 * (4 * dims.d_model) / 3;
    return (two_thirds + multiple_of - 1) / multiple_of * multiple_of;
  }

  SwigluFfn(const ModelDims& dims, int64_t width) : dropout_(dims.dropout) {
    w_1_ = AddChild("w_1", std::make_unique<nn::Linear>(dims.d_model, width, dims.bias));
    w_3_ = AddChild("w_3", std::make_unique<nn::Linear>(dims.d_model, width, dims.bias));
    w_2_ = AddChild("w_2", std::make_unique<nn::Linear>(width, dims.d_model, dims.bias));
  }

  Var Forward(const Var& x, const ForwardContext& ctx) const override {
    Var gate = Silu(w_1_->Forward(x));       // (B, T, F)
    Var h = Mul(gate, w_3_->Forward(x));     // (B, T, F)
    if (ctx.training && dropout_ > 0.0f) h = Dropout(h, dropout_, DropoutStream(ctx, "hidden"));
    return w_2_->Forward(h);  // (B, T, C)
  }

 private:
  float dropout_;
  nn::Linear *w_1_, *w_3_, *w_2_;
};

TVLAB_REGISTER_FFN("swiglu", SwigluFfn, SwigluFfnOptions);

}  // namespace
}  // namespace tvlab
