#include "framework/core/cpu_features.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

#ifdef TVLAB_CAPPED_TO_AVX2
// Under ONEDNN_MAX_CPU_ISA=AVX2 (this test's environment): no AVX-512,
// AVX2 where the CPU has it, and the cap says it lowers an AVX-512 CPU.
TEST(IsaCap, Avx2CapHidesAvx512) {
  __builtin_cpu_init();
  EXPECT_EQ(HostIsaCap(), IsaCap::kAvx2);
  EXPECT_FALSE(CpuHasAvx512f());
  EXPECT_EQ(CpuHasAvx2(), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(IsaCapLowersCpu(), __builtin_cpu_supports("avx512f") != 0);
}
#endif

// Every value oneDNN 2.6 takes, in either case, and what it caps.
TEST(IsaCap, ParsesOneDnnValues) {
  EXPECT_EQ(ParseIsaCap(""), IsaCap::kAvx512);
  EXPECT_EQ(ParseIsaCap("ALL"), IsaCap::kAvx512);
  EXPECT_EQ(ParseIsaCap("AVX512_CORE"), IsaCap::kAvx512);
  EXPECT_EQ(ParseIsaCap("avx512_core_amx"), IsaCap::kAvx512);
  EXPECT_EQ(ParseIsaCap("AVX512_CORE_BF16"), IsaCap::kAvx512);
  EXPECT_EQ(ParseIsaCap("AVX2"), IsaCap::kAvx2);
  EXPECT_EQ(ParseIsaCap("avx2_vnni"), IsaCap::kAvx2);
  EXPECT_EQ(ParseIsaCap("Avx"), IsaCap::kAvx);
  EXPECT_EQ(ParseIsaCap("SSE41"), IsaCap::kSse41);
  EXPECT_EQ(ParseIsaCap("avx512_mic_4ops"), IsaCap::kAvx512);
  EXPECT_EQ(ParseIsaCap("AVX3"), IsaCap::kNone);
  EXPECT_EQ(ParseIsaCap("AVX512_COR"), IsaCap::kNone);  // a typo of a level oneDNN would ignore
  EXPECT_EQ(ParseIsaCap("avx-2"), IsaCap::kNone);
}

// Which caps leave bf16 dot products native (the bf16 peak and loop).
TEST(IsaCap, Bf16NeedsACapAtOrAboveAvx512CoreBf16) {
  for (const char* text : {"", "ALL", "AVX512_CORE_BF16", "avx512_core_amx", "AVX3"})
    EXPECT_TRUE(IsaCapAllowsBf16(text)) << text;  // AVX3: ignored by oneDNN, no cap
  for (const char* text : {"AVX512_CORE", "avx512_core_vnni", "AVX512_MIC", "AVX2", "SSE41"})
    EXPECT_FALSE(IsaCapAllowsBf16(text)) << text;
}

// ONEDNN_MAX_CPU_ISA where set and not empty, else DNNL_MAX_CPU_ISA.
TEST(IsaCap, ReadsTheVariablesAsOneDnnDoes) {
  const std::string start = IsaCapText();
  unsetenv("ONEDNN_MAX_CPU_ISA");
  unsetenv("DNNL_MAX_CPU_ISA");
  EXPECT_EQ(IsaCapText(), "");
  EXPECT_EQ(IsaCapProblem(), "");
  setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
  EXPECT_EQ(IsaCapText(), "AVX2");
  setenv("ONEDNN_MAX_CPU_ISA", "", 1);
  EXPECT_EQ(IsaCapText(), "AVX2");
  setenv("ONEDNN_MAX_CPU_ISA", "wide", 1);
  EXPECT_EQ(IsaCapText(), "wide");
  EXPECT_NE(IsaCapProblem().find("ONEDNN_MAX_CPU_ISA='wide'"), std::string::npos) << IsaCapProblem();
  unsetenv("DNNL_MAX_CPU_ISA");
  if (start.empty()) {
    unsetenv("ONEDNN_MAX_CPU_ISA");
  } else {
    setenv("ONEDNN_MAX_CPU_ISA", start.c_str(), 1);
  }
}

// Under no cap the functions say what the CPU has.
TEST(IsaCap, NoCapIsTheCpuItself) {
  if (!IsaCapText().empty()) GTEST_SKIP() << "a cap is set in this test's environment";
  __builtin_cpu_init();
  EXPECT_EQ(CpuHasAvx512f(), __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(CpuHasAvx2(), __builtin_cpu_supports("avx2") != 0);
  EXPECT_FALSE(IsaCapLowersCpu());
}

}  // namespace
}  // namespace tvlab
