// Where small_gemm.h's plain loop beats oneDNN on batched tiny products:
// per shape, microseconds per batched call through a cached oneDNN matmul
// primitive (as onednn_gemm.cc calls it) and through SmallBatchedGemm, on
// one thread, with the CPU model and the measured FMA peak. The limits in
// small_gemm.h (kSmallGemmMaxDim, kSmallGemmMaxMacs) are read off this
// table (bench/README.md).
// usage: bazel run //bench:small_gemm_bench   (pin it: taskset -c 0)

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "dnnl.hpp"
#include "framework/backend/cpu_onednn/small_gemm.h"
#include "framework/backend/cpu_onednn/transposed_gemm.h"
#include "framework/perf/fma_peak.h"

namespace {

using dnnl::memory;
using Clock = std::chrono::steady_clock;

// Best of 5 of the mean over `reps` calls, in microseconds.
template <typename F>
double MicrosPerCall(F&& call, int reps) {
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    const auto start = Clock::now();
    for (int r = 0; r < reps; ++r) call();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - start).count() / reps);
  }
  return best;
}

// (batch, m, k) @ (batch, k, n), B stored (n, k) when trans_b.
double OnednnMicros(const tvlab::GemmDesc& d, const float* a, const float* b, float* c, int reps) {
  const int64_t batch = d.batch, m = d.m, n = d.n, k = d.k;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  memory::desc a_md({batch, m, k}, memory::data_type::f32, memory::dims{m * k, k, 1});
  memory::desc b_md({batch, k, n}, memory::data_type::f32, d.trans_b ? memory::dims{n * k, 1, k} : memory::dims{n * k, n, 1});
  memory::desc c_md({batch, m, n}, memory::data_type::f32, memory::dims{m * n, n, 1});
  dnnl::matmul matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine));
  memory am(a_md, engine, const_cast<float*>(a)), bm(b_md, engine, const_cast<float*>(b)), cm(c_md, engine, c);
  return MicrosPerCall(
      [&] {
        matmul.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
        stream.wait();
      },
      reps);
}

}  // namespace

int main() {
  omp_set_num_threads(1);
  const tvlab::FmaPeak peak = tvlab::MeasureFmaPeak(5);
  std::printf("cpu: %s; FMA peak %.1f GFLOP/s (one thread)\n", tvlab::CpuModel().c_str(),
              peak.flops_per_second / 1e9);
  std::printf("%-7s %6s %4s %4s %4s %12s %12s %8s %s\n", "product", "batch", "m", "n", "k", "oneDNN_us", "loop_us",
              "speedup", "taken");
  const int64_t batch = 256;
  // Attention's two products per head at T queries and keys, head size hs:
  // scores q @ k^T (T x T x hs, B transposed) and weights @ v (T x hs x T).
  for (int64_t t : {8, 16, 32, 64}) {
    for (int64_t hs : {16, 32, 64}) {
     for (bool scores : {true, false}) {
      tvlab::GemmDesc d;
      d.batch = batch, d.m = t, d.n = scores ? t : hs, d.k = scores ? hs : t, d.trans_b = scores;
      const int64_t m = d.m, n = d.n, k = d.k;
      d.stride_a = m * k, d.stride_b = n * k, d.stride_c = m * n;
      std::vector<float> a(batch * m * k, 0.5f), b(batch * n * k, 0.25f), c(batch * m * n);
      const int reps = static_cast<int>(std::max<int64_t>(5, (int64_t{1} << 26) / (batch * m * n * k)));
      const double dnnl_us = OnednnMicros(d, a.data(), b.data(), c.data(), reps);
      const double loop_us =
          MicrosPerCall([&] { tvlab::onednn::SmallBatchedGemm(d, a.data(), b.data(), c.data()); }, reps);
      std::printf("%-7s %6lld %4lld %4lld %4lld %12.1f %12.1f %7.2fx %s\n", scores ? "q@k^T" : "w@v",
                  static_cast<long long>(batch),
                  static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), dnnl_us, loop_us,
                  dnnl_us / loop_us, tvlab::onednn::IsSmallBatchedGemm(d, tvlab::onednn::OnednnHasAvx512Core()) ? "loop" : "oneDNN");
     }
    }
  }
  return 0;
}
