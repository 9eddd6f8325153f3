#ifndef TVLAB_FRAMEWORK_CORE_CPU_FEATURES_H_
#define TVLAB_FRAMEWORK_CORE_CPU_FEATURES_H_

// The instruction sets the host kernels choose between at run time (each
// kernel built for them with a target attribute). __builtin_cpu_init first:
// these may run from a static initialiser, before libgcc's own.

namespace tvlab {

inline bool CpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

inline bool CpuHasAvx2Fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

inline bool CpuHasAvx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CORE_CPU_FEATURES_H_
