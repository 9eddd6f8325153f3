// The GPU backend against the reference backend, and its descriptor against
// its GPU. Built with --config=cuda (skips when the machine has no usable
// GPU) and, in every build, on the CPU emulator
// (gpu_cuda_backend_emulated_test).

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

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
      auto c1 = Random(d.batch * d.m * d.n, 3);
      // Operands on the GPU (explicit copies); the reference works on the host.
      Tensor ga = Tensor::FromVector({d.batch * d.m * d.k}, a, Device::kCuda);
      Tensor gb = Tensor::FromVector({d.batch * d.k * d.n}, b, Device::kCuda);
      Tensor gc = Tensor::FromVector({d.batch * d.m * d.n}, c1, Device::kCuda);
      gpu_->Gemm(d, ga.ptr(), gb.ptr(), gc.ptr());
      ref_->Gemm(d, a.data(), b.data(), c1.data());
      const std::vector<float> c0 = gc.ToVector();
      for (size_t i = 0; i < c0.size(); ++i) ASSERT_NEAR(c0[i], c1[i], 1e-4) << ta << tb << " " << i;
    }
}

TEST_F(GpuCuda, AdamWMatchesReference) {
  auto p1 = Random(1000, 4), g = Random(1000, 5);
  std::vector<float> m1(1000, 0.f), v1(1000, 0.f);
  Tensor gp = Tensor::FromVector({1000}, p1, Device::kCuda);
  Tensor gg = Tensor::FromVector({1000}, g, Device::kCuda);
  Tensor gm = Tensor::Zeros({1000}, Device::kCuda), gv = Tensor::Zeros({1000}, Device::kCuda);
  for (int64_t step = 1; step <= 3; ++step) {
    AdamWHyper h{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, step};
    gpu_->AdamW(gp.ptr(), gg.ptr(), gm.ptr(), gv.ptr(), 1000, h);
    ref_->AdamW(p1.data(), g.data(), m1.data(), v1.data(), 1000, h);
  }
  const std::vector<float> p0 = gp.ToVector();
  for (int i = 0; i < 1000; ++i) ASSERT_NEAR(p0[i], p1[i], 1e-6) << i;
}

TEST_F(GpuCuda, ImplementsEveryKernel) {
  // Complete: validation accepts gpu_cuda for every model, and the fused
  // attention pair (optional) runs on the GPU too.
  const BackendDescriptor& described = **FindBackend("gpu_cuda");
  EXPECT_TRUE(described.MissingKernels().empty());
  for (Kernel k : AllKernels()) EXPECT_TRUE(described.Implements(k)) << KernelName(k);
}

// The descriptor asks the driver about this process's GPU without a
// backend; the backend made here runs on the device it selected.
TEST_F(GpuCuda, DescriptorPrecisionsAreThoseOfTheBackendsGpu) {
  int device = -1, major = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  const BackendDescriptor& described = **FindBackend("gpu_cuda");
  for (Precision p : {Precision::kTf32, Precision::kBf16})
    EXPECT_EQ(described.Supports(p), major >= 8) << PrecisionName(p);
  EXPECT_TRUE(described.Supports(Precision::kFp32));
}

TEST_F(GpuCuda, CachingAllocatorReusesDeviceBlocks) {
  CachingAllocator& cuda = AllocatorFor(Device::kCuda);
  const int64_t before = cuda.Stats().system_allocations;
  for (int i = 0; i < 4; ++i) Tensor t = Tensor::Full({4096}, 1.5f, Device::kCuda);
  EXPECT_LE(cuda.Stats().system_allocations - before, 1);
  EXPECT_EQ(Tensor::Full({3}, 2.5f, Device::kCuda).ToVector(), (std::vector<float>{2.5f, 2.5f, 2.5f}));
}

}  // namespace
}  // namespace tvlab
