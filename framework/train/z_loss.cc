#include "framework/train/z_loss.h"

#include <utility>

#include "framework/autograd/ops.h"
#include "framework/autograd/routing_ops.h"
#include "framework/core/check.h"

namespace tvlab {

Var ZLoss(const Var& logits, const std::vector<int32_t>& targets, int32_t ignore_index) {
  TVLAB_CHECK_EQ(logits.rank(), 2);
  const int64_t n = logits.dim(0), v = logits.dim(1);
  TVLAB_CHECK_EQ(static_cast<int64_t>(targets.size()), n);
  // Each counted row weighs 1/N (the host's own ids: no device read).
  int64_t counted = 0;
  for (int32_t y : targets) counted += y != ignore_index;
  std::vector<float> weights(n, 0.0f);  // (N)
  for (int64_t r = 0; r < n; ++r)
    if (targets[r] != ignore_index) weights[r] = 1.0f / static_cast<float>(counted);
  // log Z = m + log sum exp(l - m) with m the row's own maximum, a constant
  // (TopKRows with k = 1 on a copy off the tape).
  const Var row_max(TopK(Var(logits.value()), 1).values.value());  // (N, 1)
  const Var sum_exp = MatMul(Exp(Sub(logits, row_max)), Var(Tensor::Full({v, 1}, 1.0f)));  // (N, V) x (V, 1)
  const Var lse = Add(Log(sum_exp), row_max);  // (N, 1)
  return Sum(Mul(Square(lse), Var(Tensor::FromVector({n, 1}, weights))));  // (N, 1) * (N, 1) -> scalar
}

std::vector<AuxiliaryDeclaration> TrainingAuxiliaryOutputs(const TrainSpec& train,
                                                           std::vector<AuxiliaryDeclaration> model_declared) {
  if (!(train.z_loss() > 0)) return model_declared;
  for (const AuxiliaryDeclaration& d : model_declared)
    TVLAB_CHECK(d.name != kZLossName) << "the model declares an auxiliary output named " << kZLossName;
  model_declared.push_back({kZLossName, /*is_loss=*/true, train.z_loss()});
  return model_declared;
}

}  // namespace tvlab
