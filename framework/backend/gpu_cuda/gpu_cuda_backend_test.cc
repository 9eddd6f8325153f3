// The GPU backend against the reference backend. Built only with
// --config=cuda; skips when the machine has no usable GPU.

#include <string>

#include "framework/backend/backend.h"
#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<float> Random(int64_t n, uint64_t salt) {
  RngStream rng(5, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = 2.0f * rng.Uniform(i) - 1.0f;
  return v;
}

class GpuCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU here: " << why;
    gpu_ = std::move(*MakeBackend("gpu_cuda"));
    ref_ = std::move(*MakeBackend("reference"));
  }
  std::unique_ptr<Backend> gpu_, ref_;
};

TEST_F(GpuCuda, GemmMatchesReferenceForAllTransposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      GemmDesc d;
      d.batch = 3, d.m = 33, d.n = 17, d.k = 65, d.trans_a = ta, d.trans_b = tb;
      d.stride_a = d.m * d.k, d.stride_b = d.k * d.n, d.stride_c = d.m * d.n;
      d.alpha = 0.5f, d.beta = 1.0f;
      auto a = Random(d.batch * d.m * d.k, 1), b = Random(d.batch * d.k * d.n, 2);
      auto c0 = Random(d.batch * d.m * d.n, 3), c1 = c0;
      gpu_->Gemm(d, a.data(), b.data(), c0.data());
      ref_->Gemm(d, a.data(), b.data(), c1.data());
      for (size_t i = 0; i < c0.size(); ++i) ASSERT_NEAR(c0[i], c1[i], 1e-4) << ta << tb << " " << i;
    }
}

TEST_F(GpuCuda, AdamWMatchesReference) {
  auto p0 = Random(1000, 4), g = Random(1000, 5), p1 = p0;
  std::vector<float> m0(1000, 0.f), v0(1000, 0.f), m1 = m0, v1 = v0;
  for (int64_t step = 1; step <= 3; ++step) {
    AdamWHyper h{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, step};
    gpu_->AdamW(p0.data(), g.data(), m0.data(), v0.data(), 1000, h);
    ref_->AdamW(p1.data(), g.data(), m1.data(), v1.data(), 1000, h);
  }
  for (int i = 0; i < 1000; ++i) ASSERT_NEAR(p0[i], p1[i], 1e-6) << i;
}

}  // namespace
}  // namespace tvlab
