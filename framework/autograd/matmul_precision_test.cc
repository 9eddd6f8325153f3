// MatMul hands runtime.precision (SetMatMulPrecision) to every GEMM it
// issues, forward and backward, and the backward keeps the forward's
// precision even if the setting changes in between.

#include "framework/autograd/matmul_precision.h"

#include <cmath>
#include <vector>

#include "framework/autograd/ops.h"
#include "framework/backend/describe_backend.h"
#include "framework/backend/reference/reference_backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// The reference backend, recording the precision of each GEMM it is asked for.
std::vector<Precision>& Recorded() {
  static auto* recorded = new std::vector<Precision>();
  return *recorded;
}
class RecordingBackend : public ReferenceBackend {
 public:
  std::string name() const override { return "recording_for_test"; }
  void Gemm(const GemmDesc& d, const float* a, const float* b, float* c) override {
    Recorded().push_back(d.precision);
    ReferenceBackend::Gemm(d, a, b, c);
  }
};
const bool registered = RegisterBackend(
    DescribeBackend<RecordingBackend>("recording_for_test").WithPrecisions(&EveryPrecision));

Var Values(const Shape& shape, float phase, bool requires_grad) {
  std::vector<float> v(NumElements(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(phase + 0.73f * i);
  return Var(Tensor::FromVector(shape, v), requires_grad);
}

TEST(MatMulPrecision, ForwardAndBothBackwardGemmsGetThePrecision) {
  ScopedBackend backend("recording_for_test");
  for (Precision p : AllPrecisions()) {
    Recorded().clear();
    Var a = Values({2, 3, 4}, 0.1f, true), w = Values({5, 4}, 0.2f, true);
    Var y;
    {
      ScopedMatMulPrecision scoped(p);
      y = MatMul(a, w, false, true);  // (2, 3, 4) x (5, 4)^T -> (2, 3, 5)
    }
    // The backward runs after the setting went back to fp32: it keeps p.
    EXPECT_EQ(CurrentMatMulPrecision(), Precision::kFp32);
    Backward(Sum(y));
    EXPECT_EQ(Recorded(), std::vector<Precision>(3, p)) << PrecisionName(p);
  }
}

TEST(MatMulPrecision, Bf16ForwardIsTheFp32ProductOfRoundedOperands) {
  ScopedBackend backend("reference");
  Var a = Values({3, 40}, 0.3f, false), b = Values({40, 2}, 0.4f, false);
  std::vector<float> ra = a.value().ToVector(), rb = b.value().ToVector();
  for (float& x : ra) x = RoundToBf16(x);
  for (float& x : rb) x = RoundToBf16(x);
  const std::vector<float> want =
      MatMul(Var(Tensor::FromVector({3, 40}, ra)), Var(Tensor::FromVector({40, 2}, rb)))
          .value()
          .ToVector();
  const std::vector<float> fp32 = MatMul(a, b).value().ToVector();
  ScopedMatMulPrecision scoped(Precision::kBf16);
  const std::vector<float> got = MatMul(a, b).value().ToVector();
  EXPECT_EQ(got, want);
  EXPECT_NE(got, fp32);
}

}  // namespace
}  // namespace tvlab
