#ifndef TVLAB_FRAMEWORK_NN_LAYERS_H_
#define TVLAB_FRAMEWORK_NN_LAYERS_H_

// The basic layers plugins build from: Linear, Embedding, Dropout.

#include <vector>

#include "framework/autograd/ops.h"
#include "framework/nn/module.h"

namespace tvlab::nn {

// y = x W^T + b, W (out, in) as torch.nn.Linear, initialised U(-1/sqrt(in),
// 1/sqrt(in)) as PyTorch's default.
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias = true);
  // A Linear whose weight (out, in) is another module's parameter (weight
  // tying: an output head over the embedding table): not a parameter of
  // this module, so it is named, counted, saved and updated once, and its
  // gradient sums both uses. The bias, if any, is this module's.
  Linear(const Var& tied_weight, bool bias);
  Var Forward(const Var& x) const;  // (..., in) -> (..., out)
  // Multiplies x by `scale` before the product (µP's output multiplier on
  // a model's head: y = (scale x) W^T + b); 1 (the default) = no multiply.
  void set_input_scale(float scale) { input_scale_ = scale; }
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  const Var& weight() const { return weight_; }

 private:
  int64_t in_, out_;
  float input_scale_ = 1.0f;
  Var weight_, bias_;
};

// Token embedding table (V, C), initialised N(0, 1) as torch.nn.Embedding.
class Embedding : public Module {
 public:
  Embedding(int64_t vocab, int64_t dim);
  // ids: B*T token ids, row-major (B, T) -> (B, T, C).
  Var Forward(const std::vector<int32_t>& ids, int64_t batch, int64_t length) const;
  int64_t vocab() const { return vocab_; }
  const Var& weight() const { return table_; }  // (V, C)

 private:
  int64_t vocab_, dim_;
  Var table_;
};

// Inverted dropout; identity in evaluation.
class Dropout : public Module {
 public:
  explicit Dropout(float p) : p_(p) {}
  Var Forward(const Var& x, const ForwardContext& ctx) const;

 private:
  float p_;
};

}  // namespace tvlab::nn

#endif  // TVLAB_FRAMEWORK_NN_LAYERS_H_
