// Position-wise FFN with GELU (Hendrycks & Gimpel 2016; BERT, GPT-2):
//   y = dropout(gelu(x W_1 + b_1)) W_2 + b_2,   W_1 (F, C), W_2 (C, F)
//   gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))       (exact, default)
//           ~ 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (tanh_approximation)
// F = model.d_ff, or 4 * d_model when it is 0. Parameter names match relu's.
//
// Example config (configs/sort_digits_gelu.pbtxt):
//   ffn { plugin: "gelu" options { [type.googleapis.com/tvlab.GeluFfnOptions] { tanh_approximation: true } } }

#include "framework/autograd/ops.h"
#include "framework/interfaces/ffn.h"
#include "framework/nn/layers.h"
#include "plugins/ffn/gelu/gelu.pb.h"

namespace tvlab {
namespace {

class GeluFfn : public Ffn {
 public:
  // model.d_ff 0 resolves to the width used.
  static void Resolve(GeluFfnOptions*, ModelDims* dims) {
    if (dims->d_ff == 0) dims->d_ff = 4 * dims->d_model;
  }
  static std::unique_ptr<Ffn> Create(const GeluFfnOptions& options, const ModelDims& dims) {
    return std::make_unique<GeluFfn>(options, dims);
  }

  GeluFfn(const GeluFfnOptions& options, const ModelDims& dims)
      : tanh_approximation_(options.tanh_approximation()), dropout_(dims.dropout) {
    const int64_t width = dims.d_ff > 0 ? dims.d_ff : 4 * dims.d_model;
    w_1_ = AddChild("w_1", std::make_unique<nn::Linear>(dims.d_model, width, dims.bias));
    w_2_ = AddChild("w_2", std::make_unique<nn::Linear>(width, dims.d_model, dims.bias));
  }

  Var Forward(const Var& x, const ForwardContext& ctx) const override {
    Var h = Gelu(w_1_->Forward(x), tanh_approximation_);  // (B, T, F)
    if (ctx.training && dropout_ > 0.0f) h = Dropout(h, dropout_, DropoutStream(ctx, "hidden"));
    return w_2_->Forward(h);  // (B, T, C)
  }

 private:
  bool tanh_approximation_;
  float dropout_;
  nn::Linear *w_1_, *w_2_;
};

TVLAB_REGISTER_FFN("gelu", GeluFfn, GeluFfnOptions);

}  // namespace
}  // namespace tvlab
