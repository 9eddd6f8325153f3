#ifndef TVLAB_FRAMEWORK_CORE_ISA_CLONES_H_
#define TVLAB_FRAMEWORK_CORE_ISA_CLONES_H_

// A plain loop built for AVX-512, AVX2 and baseline x86-64, as GCC's
// target_clones builds it, but picked by CpuHasAvx512f / CpuHasAvx2, so the
// instruction-set cap (cpu_features.h) reaches it: under
// ONEDNN_MAX_CPU_ISA=AVX2 an AVX-512 machine runs the AVX2 build, as an
// AVX2-only CPU does, and the capped tests and benchmarks exercise it.
// (target_clones' resolver reads the CPU alone and took the AVX-512 clone
// under the cap.)
//
// The loop is an always-inline function with no target of its own; each
// build inlines it into a function with that build's target, where GCC
// vectorises it for that width. The targets are target_clones' ("avx512f",
// "avx2", "default"), so each build computes what the clone of the same
// name computed. "avx512f" enables FMA and "avx2" does not: a loop whose
// builds must give the same bits is compiled with -ffp-contract=off (as
// cpu_onednn is), so that no build fuses a multiply and an add.
//
//   TVLAB_CLONED_LOOP void ReluLoop(const float* x, float* y, int64_t n) {
//     for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
//   }
//   void Relu(const float* x, float* y, int64_t n) { RunIsaClone<ReluLoop>(x, y, n); }
//
// RunIsaClone<kLoop, CloneIsa::kAvx2> stops at AVX2 (a loop whose AVX-512
// build did not pay); RunIsaCloneByWidth runs one loop in the AVX-512 build
// and another in the narrower ones.

#include <utility>

#include "framework/core/cpu_features.h"

#define TVLAB_CLONED_LOOP __attribute__((always_inline)) inline

namespace tvlab {

enum class CloneIsa { kBaseline = 0, kAvx2 = 1, kAvx512f = 2 };

// The widest build this host runs under the cap, read once.
inline CloneIsa HostCloneIsa() {
  static const CloneIsa isa = CpuHasAvx512f() ? CloneIsa::kAvx512f
                              : CpuHasAvx2()  ? CloneIsa::kAvx2
                                              : CloneIsa::kBaseline;
  return isa;
}

namespace isa_clones {

template <auto kLoop, typename... Args>
__attribute__((target("avx512f"))) auto Avx512f(Args&&... args) {
  return kLoop(std::forward<Args>(args)...);
}

template <auto kLoop, typename... Args>
__attribute__((target("avx2"))) auto Avx2(Args&&... args) {
  return kLoop(std::forward<Args>(args)...);
}

template <auto kLoop, typename... Args>
auto Baseline(Args&&... args) {
  return kLoop(std::forward<Args>(args)...);
}

}  // namespace isa_clones

// kLoop(args...) in the widest build up to kWidest that HostCloneIsa allows.
template <auto kLoop, CloneIsa kWidest = CloneIsa::kAvx512f, typename... Args>
auto RunIsaClone(Args&&... args) {
  const CloneIsa host = HostCloneIsa();
  if constexpr (kWidest == CloneIsa::kAvx512f) {
    if (host == CloneIsa::kAvx512f) return isa_clones::Avx512f<kLoop>(std::forward<Args>(args)...);
  }
  if constexpr (kWidest != CloneIsa::kBaseline) {
    if (host != CloneIsa::kBaseline) return isa_clones::Avx2<kLoop>(std::forward<Args>(args)...);
  }
  return isa_clones::Baseline<kLoop>(std::forward<Args>(args)...);
}

// kWideLoop in the AVX-512 build, kNarrowLoop (up to AVX2) elsewhere: one
// loop written two ways with the same bits, where the AVX-512 build's
// vector type is one GCC's narrower builds handle badly (DoubleLanes,
// cpu_onednn/double_lanes.h).
template <auto kWideLoop, auto kNarrowLoop, typename... Args>
auto RunIsaCloneByWidth(Args&&... args) {
  if (HostCloneIsa() == CloneIsa::kAvx512f) return isa_clones::Avx512f<kWideLoop>(std::forward<Args>(args)...);
  return RunIsaClone<kNarrowLoop, CloneIsa::kAvx2>(std::forward<Args>(args)...);
}

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CORE_ISA_CLONES_H_
