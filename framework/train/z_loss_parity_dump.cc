// Dumps train.z_loss's loss (z_loss.h) for z_loss_parity.py, on every host
// backend: logits (N, V) drawn U(-4, 4) with rows shifted by +60, -70 and
// +15 (maxima far apart), targets with some ignored (-100), the coefficient
// c, z = ZLoss(logits) and the gradient of c * z with respect to the logits.
// One tensor a line: `name rank d0 .. dn v0 v1 ...`, each name prefixed by
// the backend ("reference/z").
//   z_loss_parity_dump <out file>

#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "framework/autograd/ops.h"
#include "framework/backend/backend_registry.h"
#include "framework/interfaces/task.h"
#include "framework/testing/tensor_dump.h"
#include "framework/train/z_loss.h"

namespace tvlab {
namespace {

int Run(const std::string& out_path) {
  constexpr int64_t kN = 12, kV = 37;
  constexpr float kCoefficient = 1e-4f;
  std::mt19937 rng(2022);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> x(kN * kV);  // (N, V)
  for (float& e : x) e = u(rng);
  const float shift[] = {60.0f, -70.0f, 15.0f};
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < kV; ++j) x[r * kV + j] += shift[r];
  std::vector<int32_t> targets(kN);  // (N)
  for (int64_t r = 0; r < kN; ++r) targets[r] = r % 4 == 1 ? kIgnoreTarget : static_cast<int32_t>((r * 7) % kV);
  std::ofstream out(out_path);
  WriteTensor(out, "logits", Tensor::FromVector({kN, kV}, x));
  WriteTensor(out, "targets", Tensor::FromVector({kN}, std::vector<float>(targets.begin(), targets.end())));
  WriteTensor(out, "coefficient", Tensor::FromVector({1}, {kCoefficient}));
  for (const std::string& backend : HostBackends()) {
    ScopedBackend use(backend);
    Var logits(Tensor::FromVector({kN, kV}, x), /*requires_grad=*/true);
    const Var z = ZLoss(logits, targets, kIgnoreTarget);  // scalar
    Backward(Scale(z, kCoefficient));
    WriteTensor(out, backend + "/z", Tensor::FromVector({1}, {z.value().item()}));
    WriteTensor(out, backend + "/dlogits", logits.grad());
  }
  return out.good() ? 0 : 2;
}

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) {
  if (argc != 2) return std::cerr << "usage: z_loss_parity_dump <out file>\n", 2;
  return tvlab::Run(argv[1]);
}
