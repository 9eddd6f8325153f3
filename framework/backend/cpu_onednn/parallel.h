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

// Runs body(i) for i in [0, count): split over an OpenMP team (static
// schedule) when `parallel`, else in order on this thread without entering
// OpenMP at all. `#pragma omp parallel for if (false)` still makes a team of
// one: with libgomp about 0.4 us, a malloc and a free a region, and a
// captured sort step enters some 60 of them (bench/README.md).
template <typename Body>
inline void ForEachIndex(bool parallel, int64_t count, Body&& body) {
  if (!parallel) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) body(i);
}

// Runs body(t, team) on each thread t of a team of `threads` (OpenMP), or
// as body(0, 1) on this thread without entering OpenMP when threads <= 1.
template <typename Body>
inline void OnTeam(int threads, Body&& body) {
  if (threads <= 1) {
    body(0, 1);
    return;
  }
#pragma omp parallel num_threads(threads)
  body(omp_get_thread_num(), omp_get_num_threads());
}

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
