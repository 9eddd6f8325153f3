#include "framework/train/gradients.h"

#include <cmath>

#include "framework/backend/backend.h"

namespace tvlab {

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
