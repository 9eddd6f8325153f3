#ifndef TVLAB_FRAMEWORK_PERF_FMA_PEAK_H_
#define TVLAB_FRAMEWORK_PERF_FMA_PEAK_H_

// This machine's single-thread FP32 FMA peak, measured: twelve independent
// FMA chains per vector register hide the FMA latency; the widest ISA the
// CPU has is used (AVX-512, else AVX2+FMA), below the instruction-set cap
// (ONEDNN_MAX_CPU_ISA, framework/core/cpu_features.h) when one is set. What bench/fma_peak prints and
// what a run's MFU is a fraction of (framework/perf/peak.h), so fractions of
// peak are of a measured peak, not of a datasheet's.

#include <string>

namespace tvlab {

struct FmaPeak {
  double flops_per_second = 0;  // one core, 2 FLOPs per FMA lane; 0: no FMA ISA
  std::string isa;              // "avx512f", "avx2+fma", or "" (none)
};

// The ISA MeasureFmaPeak uses on this CPU under the cap ("" when it has no
// FMA).
std::string FmaIsa();

// The best of `runs` timings of ~0.05-0.2 s each, on the calling thread.
FmaPeak MeasureFmaPeak(int runs = 5);

// The bf16 dot-product peak's ISA: "avx512bf16" where the CPU has
// AVX512_BF16 and the cap leaves it to oneDNN (IsaCapAllowsBf16), else ""
// (bf16 products are then emulated in fp32 FMAs, and the FMA peak is
// theirs).
std::string Bf16DotIsa();

// The same measurement with `vdpbf16ps` (two multiply-adds of bf16 pairs an
// fp32 lane: 4 FLOPs a lane), what a runtime.precision bf16 run's MFU is a
// fraction of there; flops_per_second 0 where Bf16DotIsa() is "".
FmaPeak MeasureBf16DotPeak(int runs = 5);

// The CPU's model string (/proc/cpuinfo "model name", e.g. "AMD EPYC 9R14
// 96-Core Processor"), or "unknown CPU" where the OS does not say.
std::string CpuModel();

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_PERF_FMA_PEAK_H_
