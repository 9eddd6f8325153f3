#include "framework/core/isa_clones.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

// A sum whose vectorised order (lane l adds elements l, l + W, ...; the
// lanes then added) depends on the build's vector width W, so the bits say
// which build ran: 4 lanes baseline (SSE), 8 AVX2, 16 AVX-512.
TVLAB_CLONED_LOOP float LaneSumLoop(const float* x, int64_t n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

// LaneSumLoop's sum negated: a second loop that RunIsaCloneByWidth's
// choice can be read from.
TVLAB_CLONED_LOOP float NegatedLaneSumLoop(const float* x, int64_t n) { return -LaneSumLoop(x, n); }

// Each element one rounded multiply: the same bits in every build.
TVLAB_CLONED_LOOP void ProductLoop(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

// Values whose sum rounds differently in each grouping: large terms that
// cancel within some lane widths and not others, and small ones between.
std::vector<float> Terms() {
  std::vector<float> x(64, 0.0f);
  for (int64_t i = 0; i < 64; ++i) x[i] = 1.0f + 0.25f * static_cast<float>(i % 7);
  x[0] = 3.0e7f, x[4] = -3.0e7f, x[8] = 3.0e7f, x[16] = -3.0e7f;
  return x;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// The sum of each build this CPU can execute (the cap aside), by name.
struct BuildSums {
  float baseline = 0.0f, avx2 = 0.0f, avx512f = 0.0f;
};

BuildSums SumsOfEachBuild(const std::vector<float>& x) {
  __builtin_cpu_init();
  const int64_t n = static_cast<int64_t>(x.size());
  BuildSums s;
  s.baseline = isa_clones::Baseline<LaneSumLoop>(x.data(), n);
  if (__builtin_cpu_supports("avx2")) s.avx2 = isa_clones::Avx2<LaneSumLoop>(x.data(), n);
  if (__builtin_cpu_supports("avx512f")) s.avx512f = isa_clones::Avx512f<LaneSumLoop>(x.data(), n);
  return s;
}

TEST(IsaClones, HostBuildFollowsTheCap) {
  __builtin_cpu_init();
  const CloneIsa expected = CpuHasAvx512f() ? CloneIsa::kAvx512f : CpuHasAvx2() ? CloneIsa::kAvx2 : CloneIsa::kBaseline;
  EXPECT_EQ(HostCloneIsa(), expected);
#ifdef TVLAB_CAPPED_TO_AVX2
  EXPECT_NE(HostCloneIsa(), CloneIsa::kAvx512f);
  if (__builtin_cpu_supports("avx2")) {
    EXPECT_EQ(HostCloneIsa(), CloneIsa::kAvx2);
  }
#endif
}

// The builds are told apart by their sums (else the checks after them would
// prove nothing), and RunIsaClone runs the one HostCloneIsa names, or AVX2
// at most when asked.
TEST(IsaClones, RunIsaCloneRunsTheHostBuild) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "under AddressSanitizer GCC does not vectorise the sum, so the builds give the same bits";
#endif
  const std::vector<float> x = Terms();
  const int64_t n = static_cast<int64_t>(x.size());
  const BuildSums s = SumsOfEachBuild(x);
  if (__builtin_cpu_supports("avx2")) {
    EXPECT_NE(Bits(s.avx2), Bits(s.baseline)) << s.avx2;
  }
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_NE(Bits(s.avx512f), Bits(s.avx2)) << s.avx512f;
  }

  const float host = HostCloneIsa() == CloneIsa::kAvx512f ? s.avx512f
                     : HostCloneIsa() == CloneIsa::kAvx2  ? s.avx2
                                                          : s.baseline;
  EXPECT_EQ(Bits(RunIsaClone<LaneSumLoop>(x.data(), n)), Bits(host));
  const float at_most_avx2 = HostCloneIsa() == CloneIsa::kBaseline ? s.baseline : s.avx2;
  EXPECT_EQ(Bits(RunIsaClone<LaneSumLoop, CloneIsa::kAvx2>(x.data(), n)), Bits(at_most_avx2));
  EXPECT_EQ(Bits(RunIsaClone<LaneSumLoop, CloneIsa::kBaseline>(x.data(), n)), Bits(s.baseline));
  // The wide loop in the AVX-512 build, else the narrow one up to AVX2.
  const float by_width = HostCloneIsa() == CloneIsa::kAvx512f ? s.avx512f : -at_most_avx2;
  EXPECT_EQ(Bits(RunIsaCloneByWidth<LaneSumLoop, NegatedLaneSumLoop>(x.data(), n)), Bits(by_width));
}

// Elementwise loops give the same bits in every build (what the framework's
// cloned loops rely on).
TEST(IsaClones, ElementwiseBuildsAgree) {
  __builtin_cpu_init();
  std::vector<float> a(37), b(37), base(37), wide(37);
  for (int i = 0; i < 37; ++i) a[i] = 0.1f * static_cast<float>(i) - 1.3f, b[i] = 1.0f / (3.0f + i);
  isa_clones::Baseline<ProductLoop>(a.data(), b.data(), base.data(), int64_t{37});
  if (__builtin_cpu_supports("avx2")) {
    isa_clones::Avx2<ProductLoop>(a.data(), b.data(), wide.data(), int64_t{37});
    EXPECT_EQ(std::memcmp(base.data(), wide.data(), sizeof(float) * 37), 0);
  }
  if (__builtin_cpu_supports("avx512f")) {
    isa_clones::Avx512f<ProductLoop>(a.data(), b.data(), wide.data(), int64_t{37});
    EXPECT_EQ(std::memcmp(base.data(), wide.data(), sizeof(float) * 37), 0);
  }
}

}  // namespace
}  // namespace tvlab
