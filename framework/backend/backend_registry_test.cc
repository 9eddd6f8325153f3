// The backends' descriptors: every registered one agrees with the backend it
// makes (name, device, GEMM precisions), answers questions without
// constructing a backend, and derives its kernels from the class (a kernel
// outside the set stops when called; one inside runs).

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/describe_backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

class DescriptorAgreement : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    described_ = *FindBackend(GetParam());
    auto made = MakeBackend(GetParam());
    if (!described_->DevicePresent()) {
      EXPECT_EQ(made.status().code(), absl::StatusCode::kFailedPrecondition) << made.status();
      GTEST_SKIP() << made.status().message();  // e.g. gpu_cuda on a machine without a GPU
    }
    ASSERT_TRUE(made.ok()) << made.status();
    backend_ = std::move(*made);
  }
  const BackendDescriptor* described_ = nullptr;
  std::unique_ptr<Backend> backend_;
};

TEST_P(DescriptorAgreement, NameAndDevice) {
  EXPECT_EQ(backend_->name(), described_->name);
  EXPECT_EQ(backend_->device(), described_->device);
}

// Every precision the descriptor declares, the backend's GEMM runs and
// matches the reference's on operands already rounded to it (then every
// precision multiplies the same values; only the summation order differs).
TEST_P(DescriptorAgreement, GemmRunsInEveryDeclaredPrecision) {
  const std::vector<std::string> names = described_->PrecisionNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "fp32");
  auto reference = std::move(*MakeBackend("reference"));
  for (Precision precision : AllPrecisions()) {
    if (!described_->Supports(precision)) continue;
    GemmDesc d;
    d.m = 3, d.n = 2, d.k = 4, d.precision = precision;
    std::vector<float> a(12), b(8), want(6);
    for (int i = 0; i < 12; ++i) a[i] = RoundToBf16(0.25f * i - 1.0f);
    for (int i = 0; i < 8; ++i) b[i] = RoundToBf16(0.5f - 0.125f * i);
    reference->Gemm(d, a.data(), b.data(), want.data());
    const Device device = backend_->device();
    Tensor ta = Tensor::FromVector({12}, a, device), tb = Tensor::FromVector({8}, b, device);
    Tensor tc = Tensor::FromVector({6}, std::vector<float>(6, 7.0f), device);
    backend_->Gemm(d, ta.ptr(), tb.ptr(), tc.ptr());
    const std::vector<float> got = tc.ToVector();
    for (int i = 0; i < 6; ++i)
      EXPECT_NEAR(got[i], want[i], 1e-6f * (1.0f + std::fabs(want[i])))
          << PrecisionName(precision) << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, DescriptorAgreement,
                         ::testing::ValuesIn(RegisteredBackends()),
                         [](const auto& info) { return info.param; });

// Capability questions read descriptors only; making a backend constructs one.
TEST(BackendRegistry, QuestionsConstructNoBackend) {
  const int64_t before = BackendsConstructed();
  for (const std::string& name : RegisteredBackends()) {
    const BackendDescriptor& d = **FindBackend(name);
    (void)d.MissingKernels();
    (void)d.PrecisionNames();
    (void)d.DevicePresent();
  }
  (void)UsableBackends();
  (void)HostBackends();
  (void)CompleteBackends();
  EXPECT_EQ(BackendsConstructed(), before);
  auto made = MakeBackend("reference");
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(BackendsConstructed(), before + 1);
}

TEST(BackendRegistry, CensusAndUnknownName) {
  // cpu_onednn, reference and simulated_device always, complete; gpu_cuda
  // too under --config=cuda (or with the emulator), complete, usable or
  // refused cleanly (FailedPrecondition) where there is no GPU.
  std::vector<std::string> registered = RegisteredBackends();
  EXPECT_EQ(registered.front(), "cpu_onednn");
  EXPECT_EQ(registered.back(), "simulated_device");
  for (const std::string& name : registered) {
    EXPECT_TRUE((*FindBackend(name))->MissingKernels().empty()) << name;
    if (name == "cpu_onednn" || name == "reference" || name == "simulated_device") continue;
    EXPECT_EQ(name, "gpu_cuda");
    auto made = MakeBackend(name);
    EXPECT_TRUE(made.ok() || made.status().code() == absl::StatusCode::kFailedPrecondition)
        << made.status();
  }
  EXPECT_EQ(HostBackends(), (std::vector<std::string>{"cpu_onednn", "reference"}));
  absl::Status status = SetBackend("tpu");
  EXPECT_NE(std::string(status.message()).find("unknown backend plugin 'tpu'; registered: cpu_onednn, "),
            std::string::npos)
      << status;
  EXPECT_EQ(CurrentBackend().name(), "cpu_onednn");
  EXPECT_EQ(CurrentBackendDescriptor().name, "cpu_onednn");
}

// A backend class that implements two kernels, to check what its
// descriptor derives (it is not registered).
class TwoKernelBackend : public Backend {
 public:
  std::string name() const override { return "two_kernels_for_test"; }
  TVLAB_OVERRIDE_KERNEL(Gemm);
  TVLAB_OVERRIDE_KERNEL(FusedAttention);
};
void TwoKernelBackend::Gemm(const GemmDesc&, const float*, const float*, float*) {}
void TwoKernelBackend::FusedAttention(const FusedAttentionDesc&, const float*, const float*,
                                      const float*, float*, float*) {}

// A value of each parameter type: zeros, nulls, empty shapes.
template <typename T>
T Zero() {
  return T{};
}
template <>
RngStream Zero<RngStream>() {
  return RngStream(0, RngPurpose::kDropout, 0);
}

template <typename... Parameters>
void CallWithZeros(Backend& backend, void (Backend::*kernel)(Parameters...)) {
  (backend.*kernel)(Zero<std::decay_t<Parameters>>()...);
}

// Calls kernel `k` of `backend` with zero arguments.
void CallKernel(Backend& backend, Kernel k) {
  switch (k) {
#define TVLAB_KERNEL(name, kind, parameters, arguments) \
  case Kernel::k##name:                                 \
    return CallWithZeros(backend, &Backend::name);
#include "framework/backend/kernels.def"
  }
}

TEST(BackendDescriptorDeathTest, KernelsAreWhatTheClassDeclares) {
  const BackendDescriptor d = DescribeBackend<TwoKernelBackend>("two_kernels_for_test");
  TwoKernelBackend backend;
  for (Kernel k : AllKernels()) {
    const bool declared = k == Kernel::kGemm || k == Kernel::kFusedAttention;
    const bool composed = KernelKindOf(k) == KernelKind::kComposed;
    EXPECT_EQ(d.Implements(k), declared || composed) << KernelName(k);
    if (!declared && !composed) {  // Composed ones run other (missing) kernels
      EXPECT_DEATH(CallKernel(backend, k), std::string("backend two_kernels_for_test does not "
                                                       "implement kernel ") + KernelName(k));
    }
  }
  CallKernel(backend, Kernel::kGemm);  // declared: runs (and does nothing)
  CallKernel(backend, Kernel::kFusedAttention);
  // Missing: every Required kernel but the declared Gemm (an Optional or
  // Composed kernel is never missing: the framework composes it).
  size_t required = 0;
  for (Kernel k : AllKernels())
    if (KernelKindOf(k) == KernelKind::kRequired && k != Kernel::kGemm) ++required;
  EXPECT_EQ(d.MissingKernels().size(), required);
  EXPECT_EQ(d.MissingKernels().front(), "Unary");
}

TEST(KernelTable, NamesKindsAndOrder) {
  EXPECT_EQ(AllKernels().front(), Kernel::kGemm);
  EXPECT_STREQ(KernelName(Kernel::kGemmBias), "GemmBias");
  EXPECT_EQ(KernelKindOf(Kernel::kGemmBias), KernelKind::kComposed);
  EXPECT_EQ(KernelKindOf(Kernel::kAdamWMany), KernelKind::kComposed);
  EXPECT_EQ(KernelKindOf(Kernel::kFusedAttention), KernelKind::kOptional);
  EXPECT_EQ(KernelKindOf(Kernel::kFusedAttentionBackward), KernelKind::kOptional);
  EXPECT_EQ(KernelKindOf(Kernel::kSoftmax), KernelKind::kRequired);
  for (int i = 0; i < kKernelCount; ++i) EXPECT_EQ(static_cast<int>(AllKernels()[i]), i);
}

}  // namespace
}  // namespace tvlab
