// Squared-ReLU FFN (So et al. 2021, "Primer: Searching for Efficient
// Transformers for Language Modeling", section 3; modded-nanogpt's MLP):
//   y = dropout(relu(x W_1 + b_1)^2) W_2 + b_2,   W_1 (F, C), W_2 (C, F)
// The ReLU FFN with the activation squared: the same two matrices, names
// and width, F = model.d_ff, or 4 * d_model when it is 0. Biases follow
// model.bias.
//
// Example config (configs/sort_digits_relu2.pbtxt):
//   ffn { plugin: "relu2" }

#include "framework/autograd/ops.h"
#include "framework/interfaces/ffn.h"
#include "framework/nn/layers.h"
#include "plugins/ffn/relu2/relu2.pb.h"

namespace tvlab {
namespace {

class Relu2Ffn : public Ffn {
 public:
  // model.d_ff 0 resolves to the width used.
  static void Resolve(Relu2FfnOptions*, ModelDims* dims) {
    if (dims->d_ff == 0) dims->d_ff = 4 * dims->d_model;
  }
  static std::unique_ptr<Ffn> Create(const Relu2FfnOptions&, const ModelDims& dims) {
    return std::make_unique<Relu2Ffn>(dims);
  }

  explicit Relu2Ffn(const ModelDims& dims) : dropout_(dims.dropout) {
    const int64_t width = dims.d_ff > 0 ? dims.d_ff : 4 * dims.d_model;
    w_1_ = AddChild("w_1", std::make_unique<nn::Linear>(dims.d_model, width, dims.bias));
    w_2_ = AddChild("w_2", std::make_unique<nn::Linear>(width, dims.d_model, dims.bias));
  }

  Var Forward(const Var& x, const ForwardContext& ctx) const override {
    Var h = Square(Relu(w_1_->Forward(x)));  // (B, T, F)
    if (ctx.training && dropout_ > 0.0f) h = Dropout(h, dropout_, DropoutStream(ctx, "hidden"));
    return w_2_->Forward(h);  // (B, T, C)
  }

 private:
  float dropout_;
  nn::Linear *w_1_, *w_2_;
};

TVLAB_REGISTER_FFN("relu2", Relu2Ffn, Relu2FfnOptions);

}  // namespace
}  // namespace tvlab
