#include "framework/nn/layers.h"

#include <cmath>

namespace tvlab::nn {

Linear::Linear(int64_t in, int64_t out, bool bias) : in_(in), out_(out) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(in));
  weight_ = AddParameter("weight", {out, in}, Init::Uniform(bound));
  if (bias) bias_ = AddParameter("bias", {out}, Init::Uniform(bound));
}

Linear::Linear(const Var& tied_weight, bool bias)
    : in_(tied_weight.dim(1)), out_(tied_weight.dim(0)), weight_(tied_weight) {
  if (bias) bias_ = AddParameter("bias", {out_}, Init::Uniform(1.0f / std::sqrt(static_cast<float>(in_))));
}

Var Linear::Forward(const Var& x) const {
  if (input_scale_ == 1.0f) return tvlab::Linear(x, weight_, bias_);
  return tvlab::Linear(Scale(x, input_scale_), weight_, bias_);  // (..., in) -> (..., out)
}

Embedding::Embedding(int64_t vocab, int64_t dim) : vocab_(vocab), dim_(dim) {
  table_ = AddParameter("weight", {vocab, dim}, Init::Normal(1.0f));
}

Var Embedding::Forward(const std::vector<int32_t>& ids, int64_t batch, int64_t length) const {
  return Reshape(tvlab::Embedding(table_, ids), {batch, length, dim_});  // (B, T, C)
}

Var Dropout::Forward(const Var& x, const ForwardContext& ctx) const {
  if (!ctx.training || p_ <= 0.0f) return x;
  return tvlab::Dropout(x, p_, DropoutStream(ctx, "mask"));
}

}  // namespace tvlab::nn
