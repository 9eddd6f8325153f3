#ifndef TVLAB_FRAMEWORK_CORE_CPU_FEATURES_H_
#define TVLAB_FRAMEWORK_CORE_CPU_FEATURES_H_

// The instruction sets the host kernels choose between at run time (each
// kernel built for them with a target attribute). __builtin_cpu_init first:
// these may run from a static initialiser, before libgcc's own.
//
// ONEDNN_MAX_CPU_ISA (or its older name DNNL_MAX_CPU_ISA), oneDNN's cap on
// the instruction sets it may use, caps tvlab's own kernels too: with
// ONEDNN_MAX_CPU_ISA=AVX2 on an AVX-512 CPU the whole cpu_onednn backend
// runs the code an AVX2-only CPU runs (oneDNN's primitives, the AVX2
// loops, the measured AVX2 FMA peak), so those paths can be tested and
// timed on any machine. The plain loops built for several widths pick
// their build through these too (isa_clones.h), not through
// target_clones' resolvers, which read the CPU alone.

#include <string>

namespace tvlab {

// How far the cap lets the host kernels go.
enum class IsaCap { kNone = 0, kSse41 = 1, kAvx = 2, kAvx2 = 3, kAvx512 = 4 };

// The cap's text as oneDNN reads it: ONEDNN_MAX_CPU_ISA where it is set and
// not empty, else DNNL_MAX_CPU_ISA, else "".
std::string IsaCapText();

// The cap of `text` (case-insensitive, as oneDNN reads it): kAvx512 for "",
// ALL and oneDNN 2.6's AVX512_ levels (MIC, MIC_4OPS, CORE, CORE_VNNI,
// CORE_BF16, CORE_AMX: no cap below what a CPU may have); kAvx2 for AVX2
// and AVX2_VNNI; kAvx; kSse41; kNone for a value oneDNN 2.6 does not know.
IsaCap ParseIsaCap(const std::string& text);

// Whether a cap of `text` leaves AVX512_BF16 to oneDNN: "", ALL,
// AVX512_CORE_BF16 and AVX512_CORE_AMX (case-insensitive), and a value
// oneDNN ignores; not AVX512_CORE or AVX512_CORE_VNNI (oneDNN then emulates
// bf16 in fp32 FMAs) or anything lower.
bool IsaCapAllowsBf16(const std::string& text);

// The host's cap, read once: ParseIsaCap(IsaCapText()), where a value
// oneDNN ignores (kNone) caps nothing, as oneDNN treats it.
IsaCap HostIsaCap();

// Why the cap's text is not a value oneDNN 2.6 knows (which variable, its
// value, and the values it takes), or "" when it is one or unset: oneDNN
// ignores such a value silently, experiments:run refuses it.
std::string IsaCapProblem();

inline bool CpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && HostIsaCap() >= IsaCap::kAvx2;
}

inline bool CpuHasAvx2Fma() { return CpuHasAvx2() && __builtin_cpu_supports("fma"); }

inline bool CpuHasAvx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && HostIsaCap() >= IsaCap::kAvx512;
}

// Whether the cap hides an instruction set this CPU has (AVX-512, or AVX2
// below an AVX2 cap).
inline bool IsaCapLowersCpu() {
  __builtin_cpu_init();
  return (__builtin_cpu_supports("avx512f") && !CpuHasAvx512f()) || (__builtin_cpu_supports("avx2") && !CpuHasAvx2());
}

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CORE_CPU_FEATURES_H_
