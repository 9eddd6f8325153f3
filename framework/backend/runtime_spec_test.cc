// No silent fallback: validation refuses a backend that does not implement
// every kernel, naming the missing ones, and accepts the complete backends.

#include "framework/backend/runtime_spec.h"

#include <algorithm>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/describe_backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// A backend that declares GEMM only, as a partly written GPU backend would.
class GemmOnlyBackend : public Backend {
 public:
  std::string name() const override { return "gemm_only_for_test"; }
  TVLAB_OVERRIDE_KERNEL(Gemm);
};
void GemmOnlyBackend::Gemm(const GemmDesc&, const float*, const float*, float*) {}

const bool registered = RegisterBackend(DescribeBackend<GemmOnlyBackend>("gemm_only_for_test"));

std::string Problem(const std::string& backend) {
  RuntimeSpec runtime;
  runtime.set_backend(backend);
  runtime.set_threads(1);
  Problems p;
  ValidateRuntimeSpec(runtime, &p);
  return p.empty() ? "" : p.list().front();
}

TEST(RuntimeSpec, IncompleteBackendIsRefusedNamingItsMissingKernels) {
  const std::string problem = Problem("gemm_only_for_test");
  EXPECT_NE(problem.find("runtime.backend: 'gemm_only_for_test' does not implement the kernels "
                         "Unary, UnaryBackward, Binary"),
            std::string::npos)
      << problem;
  // Every required kernel of the table is named, the routing ops (the end of
  // kernels.def) included.
  EXPECT_NE(problem.find("AdamW, SgdMany, LionMany, TopKRows,"), std::string::npos) << problem;
  EXPECT_NE(problem.find("CombineFromSlotsBackward that training needs"), std::string::npos) << problem;
  // The fused attention kernels are optional (the unfused path composes them).
  EXPECT_EQ(problem.find("FusedAttention"), std::string::npos) << problem;
  EXPECT_EQ(problem.find("Gemm,"), std::string::npos) << problem;  // it has that one
  EXPECT_NE(problem.find("cpu_onednn, reference, simulated_device"), std::string::npos) << problem;
}

TEST(RuntimeSpec, CompleteBackendsPassAndTheIncompleteOneIsNotListed) {
  for (const char* name : {"cpu_onednn", "reference", "simulated_device"})
    EXPECT_EQ(Problem(name), "") << name;
  std::vector<std::string> complete = CompleteBackends();
  EXPECT_EQ(std::count(complete.begin(), complete.end(), "gemm_only_for_test"), 0);
}

TEST(RuntimeSpec, AttentionPolicyMustBeKnown) {
  RuntimeSpec runtime;
  for (const char* ok : {"auto", "fused", "unfused"}) {
    runtime.set_attention(ok);
    Problems p;
    ValidateRuntimeSpec(runtime, &p);
    EXPECT_TRUE(p.empty()) << ok;
  }
  runtime.set_attention("flash");
  Problems p;
  ValidateRuntimeSpec(runtime, &p);
  ASSERT_EQ(p.list().size(), 1u);
  EXPECT_NE(p.list().front().find("runtime.attention: 'flash' is not a way to run attention; use "
                                   "\"auto\" (the default), \"fused\" or \"unfused\""),
            std::string::npos)
      << p.list().front();
}

std::vector<std::string> PrecisionProblems(const std::string& backend,
                                           const std::string& precision) {
  RuntimeSpec runtime;
  runtime.set_backend(backend);
  runtime.set_precision(precision);
  Problems p;
  ValidateRuntimeSpec(runtime, &p);
  return p.list();
}

TEST(RuntimeSpec, PrecisionDefaultsToFp32AndEveryBackendRunsIt) {
  EXPECT_EQ(RuntimeSpec().precision(), "fp32");
  for (const char* backend : {"cpu_onednn", "reference", "simulated_device"})
    EXPECT_TRUE(PrecisionProblems(backend, "fp32").empty()) << backend;
  for (const char* precision : {"bf16", "tf32"}) {
    EXPECT_TRUE(PrecisionProblems("reference", precision).empty()) << precision;
    EXPECT_TRUE(PrecisionProblems("simulated_device", precision).empty()) << precision;
  }
}

TEST(RuntimeSpec, UnknownPrecisionNamesTheFieldAndTheAllowedValues) {
  const std::vector<std::string> problems = PrecisionProblems("reference", "fp16");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems.front(),
            "runtime.precision: 'fp16' is not a precision; use one of \"fp32\", \"tf32\", "
            "\"bf16\" (fp32 is the default)");
}

TEST(RuntimeSpec, PrecisionTheBackendCannotRunIsRefusedNamingTheBackend) {
  // oneDNN has no TF32 on CPUs.
  std::vector<std::string> problems = PrecisionProblems("cpu_onednn", "tf32");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems.front().find("runtime.precision: backend 'cpu_onednn' cannot run 'tf32' "
                                  "GEMMs; it supports fp32"),
            std::string::npos)
      << problems.front();
  EXPECT_NE(problems.front().find("no TF32 matmul on CPUs"), std::string::npos) << problems.front();
  EXPECT_NE(problems.front().find("a backend that runs 'tf32' (reference, simulated_device)"),
            std::string::npos)
      << problems.front();
  // A backend that declares nothing beyond fp32 (the default declaration).
  problems = PrecisionProblems("gemm_only_for_test", "bf16");
  ASSERT_EQ(problems.size(), 2u);  // and its missing kernels
  EXPECT_NE(problems.back().find("backend 'gemm_only_for_test' cannot run 'bf16' GEMMs; it "
                                 "supports fp32. Choose one of those, or a backend that runs "
                                 "'bf16' ("),
            std::string::npos)
      << problems.back();
}

TEST(RuntimeSpecDeathTest, CallingAnUndeclaredKernelStopsNamingIt) {
  GemmOnlyBackend backend;
  std::vector<float> x(4);
  EXPECT_DEATH(backend.Softmax(x.data(), x.data(), 2, 2),
               "backend gemm_only_for_test does not implement kernel Softmax");
}

}  // namespace
}  // namespace tvlab
