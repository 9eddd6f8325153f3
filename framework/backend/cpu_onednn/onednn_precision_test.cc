// cpu_onednn's descriptor decides bf16 from the instruction sets oneDNN uses
// (no engine); here that answer is checked against oneDNN itself: whether it
// creates a bf16 x bf16 -> f32 matmul on this CPU. BUILD.bazel runs this
// twice: on the CPU as it is, and with DNNL_MAX_CPU_ISA=AVX2, where oneDNN
// must refuse bf16 and validation must say which instruction set is missing.

#include <cstdlib>
#include <string>

#include "framework/backend/backend.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "gtest/gtest.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace tvlab {
namespace {

bool OnednnCreatesBf16Matmul() {
  using dnnl::memory;
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    memory::desc a({1, 16, 16}, memory::data_type::bf16, memory::format_tag::abc);
    memory::desc b({1, 16, 16}, memory::data_type::bf16, memory::format_tag::abc);
    memory::desc c({1, 16, 16}, memory::data_type::f32, memory::format_tag::abc);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

TEST(OnednnPrecision, Bf16IsDeclaredExactlyWhereOnednnCreatesTheMatmul) {
  const BackendDescriptor& described = **FindBackend("cpu_onednn");
  const bool creates = OnednnCreatesBf16Matmul();
  EXPECT_EQ(described.Supports(Precision::kBf16), creates);
#ifdef TVLAB_ONEDNN_LIMITED_TO_AVX2  // onednn_precision_avx2_test
  const char* limit = std::getenv("DNNL_MAX_CPU_ISA");
  ASSERT_TRUE(limit != nullptr && std::string(limit) == "AVX2") << "the test's env is not set";
  EXPECT_FALSE(creates) << "oneDNN limited to AVX2 created a bf16 matmul";
  EXPECT_EQ(described.precision(Precision::kBf16).why_not,
            "oneDNN could not create a bf16 matmul on this CPU: it needs at least the "
            "AVX512_CORE instruction set (AVX512_BF16 or AMX run bf16 natively)");
#endif
  if (creates) {
    EXPECT_EQ(described.PrecisionNames(), (std::vector<std::string>{"fp32", "bf16"}));
  }
}

TEST(OnednnPrecision, NeverTf32) {
  const PrecisionSupport tf32 = OnednnPrecisionSupport(Precision::kTf32);
  EXPECT_FALSE(tf32.supported);
  EXPECT_EQ(tf32.why_not,
            "TF32 is a format of NVIDIA tensor cores; oneDNN has no TF32 matmul on CPUs");
}

}  // namespace
}  // namespace tvlab
