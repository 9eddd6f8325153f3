#include "framework/train/adamw.h"

#include <cmath>

#include "framework/backend/backend.h"

namespace tvlab {

AdamW::AdamW(std::vector<std::pair<std::string, Var>> params, const AdamWSpec& spec)
    : spec_(spec) {
  for (auto& [name, var] : params) {
    slots_.push_back({name, var, Tensor::Zeros(var.shape()), Tensor::Zeros(var.shape()),
                      DecaysWeight(spec, name, var.rank())});
  }
}

bool DecaysWeight(const AdamWSpec& spec, const std::string& name, int64_t rank) {
  if (!spec.decay_biases_and_norms() && rank < 2) return false;
  if (!spec.decay_embeddings() && name.find("embedding") != std::string::npos) return false;
  return true;
}

std::vector<std::pair<std::string, Var>> AdamW::StateTensors() const {
  std::vector<std::pair<std::string, Var>> out;
  for (const Slot& s : slots_) {
    out.emplace_back(s.name + ".exp_avg", Var(s.m));
    out.emplace_back(s.name + ".exp_avg_sq", Var(s.v));
  }
  return out;
}

void AdamW::Step(float lr) {
  ++step_;
  const AdamWHyper h{lr, spec_.beta1(), spec_.beta2(), spec_.eps(), spec_.weight_decay(), step_};
  std::vector<AdamWTensor> tensors;  // every parameter with a gradient, one backend call
  for (Slot& s : slots_) {
    if (!s.param.grad().defined()) continue;
    tensors.push_back({s.param.mutable_value().ptr(), s.param.grad().ptr(), s.m.ptr(), s.v.ptr(),
                       s.m.numel(), s.decay ? spec_.weight_decay() : 0.0f});
  }
  CurrentBackend().AdamWMany(tensors, h);
}

void ZeroGrads(const std::vector<std::pair<std::string, Var>>& params) {
  for (auto& [name, var] : params) const_cast<Var&>(var).ZeroGrad();
}

double ClipGradNorm(const std::vector<std::pair<std::string, Var>>& params, double max_norm) {
  const double norm = GlobalGradNorm(params);
  if (max_norm <= 0.0 || norm <= max_norm) return norm;
  const float scale = static_cast<float>(max_norm / (norm + 1e-6));  // as torch's clip_grad_norm_
  const Tensor scale_t = Tensor::Scalar(scale);
  for (const auto& [name, var] : params) {
    if (!var.grad().defined()) continue;
    Tensor& g = const_cast<Var&>(var).mutable_grad();
    CurrentBackend().Binary(BinaryOp::kMul, g.ptr(), g.shape(), scale_t.ptr(), {}, g.ptr(),
                            g.shape());
  }
  return norm;
}

double GlobalGradNorm(const std::vector<std::pair<std::string, Var>>& params) {
  // One double accumulator on the device; one 8-byte copy back (the norm is
  // logged and decides the clipping).
  DeviceInts acc = DeviceInts::Empty(2);  // 8 bytes, used as one double
  double sum = 0.0;
  AllocatorFor(acc.device()).memory().CopyFromHost(&sum, acc.ptr(), sizeof(double));
  for (const auto& [name, var] : params) {
    if (!var.grad().defined()) continue;
    CurrentBackend().SumSquares(var.grad().ptr(), var.grad().numel(),
                                reinterpret_cast<double*>(acc.ptr()));
  }
  AllocatorFor(acc.device()).memory().CopyToHost(acc.ptr(), &sum, sizeof(double));
  return std::sqrt(sum);
}

}  // namespace tvlab
