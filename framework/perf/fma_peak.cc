#include "framework/perf/fma_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "framework/core/cpu_features.h"

namespace tvlab {
namespace {

constexpr long kIterations = 20'000'000;

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Keeps the accumulators alive so the loop is not optimised away.
volatile float sink;

// One body per ISA (intrinsics need their target on the enclosing function).
#define TVLAB_FMA_BODY(V, SET, FMA, LANES)                       \
  V acc[12];                                                   \
  for (int i = 0; i < 12; ++i) acc[i] = SET(1.0f + i * 1e-3f); \
  const V a = SET(0.999999f), b = SET(1e-7f);                  \
  const auto start = std::chrono::steady_clock::now();         \
  for (long n = 0; n < kIterations; ++n)                       \
    for (int i = 0; i < 12; ++i) acc[i] = FMA(acc[i], a, b);   \
  const double seconds = Seconds(start);                       \
  float lanes[LANES], total = 0.0f;                            \
  for (int i = 0; i < 12; ++i) {                               \
    std::memcpy(lanes, &acc[i], sizeof(lanes));                \
    for (float x : lanes) total += x;                          \
  }                                                            \
  sink = total;                                                \
  return 2.0 * LANES * 12 * kIterations / seconds;

__attribute__((target("avx512f"))) double Avx512() {
  TVLAB_FMA_BODY(__m512, _mm512_set1_ps, _mm512_fmadd_ps, 16)
}

__attribute__((target("avx2,fma"))) double Avx2() {
  TVLAB_FMA_BODY(__m256, _mm256_set1_ps, _mm256_fmadd_ps, 8)
}

// Twelve chains of `vdpbf16ps`, as TVLAB_FMA_BODY's (the bf16 pairs' bits
// 0x3f80: 1.0 each).
__attribute__((target("avx512f,avx512bf16"))) double Avx512Bf16() {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3f803f80));
  const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x33d633d6));  // about 1e-7
  const auto start = std::chrono::steady_clock::now();
  for (long n = 0; n < kIterations; ++n)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  const double seconds = Seconds(start);
  float lanes[16], total = 0.0f;
  for (int i = 0; i < 12; ++i) {
    std::memcpy(lanes, &acc[i], sizeof(lanes));
    for (float x : lanes) total += x;
  }
  sink = total;
  return 4.0 * 16 * 12 * kIterations / seconds;
}

}  // namespace

std::string Bf16DotIsa() {
  __builtin_cpu_init();
  return CpuHasAvx512f() && __builtin_cpu_supports("avx512bf16") && IsaCapAllowsBf16(IsaCapText()) ? "avx512bf16"
                                                                                                  : "";
}

FmaPeak MeasureBf16DotPeak(int runs) {
  FmaPeak peak;
  peak.isa = Bf16DotIsa();
  if (peak.isa.empty()) return peak;
  for (int run = 0; run < runs; ++run) peak.flops_per_second = std::max(peak.flops_per_second, Avx512Bf16());
  return peak;
}

std::string FmaIsa() {
  if (CpuHasAvx512f()) return "avx512f";
  if (CpuHasAvx2Fma()) return "avx2+fma";
  return "";
}

FmaPeak MeasureFmaPeak(int runs) {
  FmaPeak peak;
  peak.isa = FmaIsa();
  if (peak.isa.empty()) return peak;
  for (int run = 0; run < runs; ++run) {
    const double rate = peak.isa == "avx512f" ? Avx512() : Avx2();
    if (rate > peak.flops_per_second) peak.flops_per_second = rate;
  }
  return peak;
}

std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (!absl::StartsWith(line, "model name")) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string model(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    if (!model.empty()) return model;
  }
  return "unknown CPU";
}

}  // namespace tvlab
