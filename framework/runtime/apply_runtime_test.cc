#include "framework/runtime/apply_runtime.h"

#include <omp.h>

#include <cstdlib>

#include "framework/attention/attend.h"
#include "framework/autograd/matmul_precision.h"
#include "framework/backend/backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

RuntimeSpec Runtime(const std::string& backend, const std::string& attention, const std::string& precision,
                    int threads) {
  RuntimeSpec r;
  r.set_backend(backend);
  r.set_attention(attention);
  r.set_precision(precision);
  r.set_threads(threads);
  return r;
}

// The four settings as they stand in this process.
struct Applied {
  std::string backend;
  AttentionKernel attention;
  Precision precision;
  int threads;
  bool operator==(const Applied& o) const {
    return backend == o.backend && attention == o.attention && precision == o.precision && threads == o.threads;
  }
};
Applied Now() {
  return {CurrentBackend().name(), CurrentAttentionKernel(), CurrentMatMulPrecision(), omp_get_max_threads()};
}

TEST(ApplyRuntime, PutsEverySettingIntoEffect) {
  ASSERT_TRUE(ApplyRuntime(Runtime("reference", "unfused", "bf16", 2)).ok());
  EXPECT_EQ(Now(), (Applied{"reference", AttentionKernel::kUnfused, Precision::kBf16, 2}));
  ASSERT_TRUE(ApplyRuntime(Runtime("simulated_device", "fused", "tf32", 1)).ok());
  EXPECT_EQ(Now(), (Applied{"simulated_device", AttentionKernel::kFused, Precision::kTf32, 1}));
  EXPECT_EQ(CurrentDevice(), CurrentBackend().device());
  ASSERT_TRUE(ApplyRuntime(Runtime("reference", "auto", "fp32", 3)).ok());
  EXPECT_EQ(Now(), (Applied{"reference", AttentionKernel::kAuto, Precision::kFp32, 3}));
}

TEST(ApplyRuntime, ChangesNothingWhenOneSettingCannotApply) {
  ASSERT_TRUE(ApplyRuntime(Runtime("reference", "unfused", "bf16", 2)).ok());
  const Applied before = Now();
  absl::Status s = ApplyRuntime(Runtime("no_such_backend", "fused", "fp32", 1));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no_such_backend"), absl::string_view::npos) << s;
  EXPECT_EQ(Now(), before);
  s = ApplyRuntime(Runtime("simulated_device", "fused", "half", 1));
  EXPECT_NE(s.message().find("runtime.precision: 'half'"), absl::string_view::npos) << s;
  EXPECT_EQ(Now(), before);
  s = ApplyRuntime(Runtime("simulated_device", "sometimes", "fp32", 1));
  EXPECT_NE(s.message().find("runtime.attention: 'sometimes'"), absl::string_view::npos) << s;
  EXPECT_EQ(Now(), before);
  s = ApplyRuntime(Runtime("simulated_device", "fused", "fp32", 0));
  EXPECT_NE(s.message().find("runtime.threads must be >= 1 (got 0)"), absl::string_view::npos) << s;
  EXPECT_EQ(Now(), before);
}

// An instruction-set cap oneDNN would ignore is refused, naming the
// variable that holds it (ONEDNN_MAX_CPU_ISA before DNNL_MAX_CPU_ISA, as
// oneDNN reads them); one it knows applies.
TEST(ApplyRuntime, RefusesAnInstructionSetCapOneDnnWouldIgnore) {
  ASSERT_TRUE(ApplyRuntime(Runtime("reference", "unfused", "bf16", 2)).ok());
  const Applied before = Now();
  ASSERT_EQ(setenv("DNNL_MAX_CPU_ISA", "AVX3", 1), 0);
  absl::Status s = ApplyRuntime(Runtime("simulated_device", "fused", "fp32", 1));
  EXPECT_NE(s.message().find("DNNL_MAX_CPU_ISA='AVX3' is not an instruction set oneDNN 2.6 knows"),
            absl::string_view::npos)
      << s;
  EXPECT_EQ(Now(), before);
  ASSERT_EQ(setenv("ONEDNN_MAX_CPU_ISA", "avx2", 1), 0);  // read first, and case-insensitive
  EXPECT_TRUE(ApplyRuntime(Runtime("simulated_device", "fused", "fp32", 1)).ok());
  ASSERT_EQ(setenv("ONEDNN_MAX_CPU_ISA", "avx-512", 1), 0);
  s = ApplyRuntime(Runtime("reference", "fused", "fp32", 1));
  EXPECT_NE(s.message().find("ONEDNN_MAX_CPU_ISA='avx-512'"), absl::string_view::npos) << s;
  unsetenv("ONEDNN_MAX_CPU_ISA");
  unsetenv("DNNL_MAX_CPU_ISA");
  EXPECT_TRUE(ApplyRuntime(Runtime("reference", "fused", "fp32", 1)).ok());
}

}  // namespace
}  // namespace tvlab
