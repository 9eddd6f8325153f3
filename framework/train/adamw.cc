#include "framework/train/adamw.h"

#include <cmath>

#include "framework/backend/backend.h"

namespace tvlab {

AdamW::AdamW(std::vector<std::pair<std::string, Var>> params, const AdamWSpec& spec)
    : spec_(spec) {
  for (auto& [name, var] : params) {
    slots_.push_back({var, Tensor::Zeros(var.shape()), Tensor::Zeros(var.shape())});
  }
}

void AdamW::Step(float lr) {
  ++step_;
  AdamWHyper h{lr, spec_.beta1(), spec_.beta2(), spec_.eps(), spec_.weight_decay(), step_};
  for (Slot& s : slots_) {
    if (!s.param.grad().defined()) continue;
    CurrentBackend().AdamW(s.param.mutable_value().data(), s.param.grad().data(), s.m.data(),
                           s.v.data(), s.m.numel(), h);
  }
}

void ZeroGrads(const std::vector<std::pair<std::string, Var>>& params) {
  for (auto& [name, var] : params) const_cast<Var&>(var).ZeroGrad();
}

double GlobalGradNorm(const std::vector<std::pair<std::string, Var>>& params) {
  double sum = 0.0;
  for (const auto& [name, var] : params) {
    if (!var.grad().defined()) continue;
    const float* g = var.grad().data();
    for (int64_t i = 0; i < var.grad().numel(); ++i) sum += static_cast<double>(g[i]) * g[i];
  }
  return std::sqrt(sum);
}

}  // namespace tvlab
