#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_PARALLEL_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_PARALLEL_H_

// When cpu_onednn's kernels use more than one OpenMP thread (their files
// share these thresholds), and a scope that limits oneDNN to one.

#include <omp.h>

#include <cstdint>

namespace tvlab {
namespace onednn {

// Below this many multiply-adds a GEMM runs on one thread: waking OpenMP
// workers costs more than they save (measured on the sort model: 2 threads
// were 1.6x slower than 1 without this; bench/README.md).
constexpr int64_t kParallelGemmMacs = int64_t{1} << 22;
// Likewise for elementwise, normalization and softmax kernels and the loops
// of this file, in elements (the GPT benchmark's (B, T, C) activations are
// 2^20; the sort model's largest are 2^17 and stay on one thread).
constexpr int64_t kParallelElements = int64_t{1} << 20;
// AdamW runs per parameter tensor; its loop is cheap per element, so it is
// threaded from a smaller size (a d 256 x d_ff 1024 weight is 2^18).
constexpr int64_t kParallelOptimizerElements = int64_t{1} << 16;

// Limits OpenMP (and so oneDNN) to one thread in a scope.
class SingleThreaded {
 public:
  explicit SingleThreaded(bool enable) : previous_(enable ? omp_get_max_threads() : 0) {
    if (previous_ > 1) omp_set_num_threads(1);
  }
  ~SingleThreaded() {
    if (previous_ > 1) omp_set_num_threads(previous_);
  }

 private:
  int previous_;
};

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_PARALLEL_H_
