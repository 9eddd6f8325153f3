// Where copying A into rows first beats oneDNN's A-transposed matmul
// (transposed_gemm.h): per shape of a weight gradient dW = dY^T X (m output
// rows, n columns, k tokens), GFLOP/s of a cached oneDNN matmul reading A
// transposed and of the same product after a oneDNN reorder of A into rows
// (and, for few rows and many columns, of the swapped route: C^T = B^T A
// with B copied into rows, C^T copied back), at the thread count given, with the CPU model, the measured FMA peak and
// which route cpu_onednn takes for the shape. The limits in
// transposed_gemm.h are read off this table (bench/README.md).
// usage: bazel run //bench:transposed_gemm_bench -- [THREADS]   (pin it: taskset -c 0)

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/aligned_buffer.h"
#include "dnnl.hpp"
#include "framework/backend/cpu_onednn/transposed_gemm.h"
#include "framework/perf/fma_peak.h"

namespace {

using dnnl::memory;
using Clock = std::chrono::steady_clock;

using Buffer = tvlab::bench::AlignedBuffer;

// Best of 3 of the mean over `reps` calls, in milliseconds.
template <typename F>
double MillisPerCall(F&& call, int reps) {
  double best = 1e30;
  for (int run = 0; run < 3; ++run) {
    const auto start = Clock::now();
    for (int r = 0; r < reps; ++r) call();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - start).count() / reps);
  }
  return best;
}

struct Rates {
  double transposed, rows_first;  // GFLOP/s
};

Rates Measure(int64_t m, int64_t n, int64_t k) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  Buffer a(m * k, 0.5f), a_rows(m * k), b(k * n, 0.25f), c(m * n);
  const memory::desc a_t({m, k}, memory::data_type::f32, memory::dims{1, m});  // stored (k, m)
  const memory::desc a_r({m, k}, memory::data_type::f32, memory::dims{k, 1});
  const memory::desc b_md({k, n}, memory::data_type::f32, memory::dims{n, 1});
  const memory::desc c_md({m, n}, memory::data_type::f32, memory::dims{n, 1});
  dnnl::matmul transposed(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_t, b_md, c_md), engine));
  dnnl::matmul in_rows(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_r, b_md, c_md), engine));
  memory am(a_t, engine, a.data), rm(a_r, engine, a_rows.data), bm(b_md, engine, b.data),
      cm(c_md, engine, c.data);
  dnnl::reorder copy(am, rm);
  const double gflop = 2.0 * m * n * k / 1e9;
  const int reps = std::max(1, static_cast<int>(2.0 / gflop));
  const double t_transposed = MillisPerCall(
      [&] {
        transposed.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
        stream.wait();
      },
      reps);
  const double t_rows = MillisPerCall(
      [&] {
        copy.execute(stream, am, rm);
        in_rows.execute(stream, {{DNNL_ARG_SRC, rm}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
        stream.wait();
      },
      reps);
  return {gflop / t_transposed * 1e3, gflop / t_rows * 1e3};
}

// The swapped route for few rows and many columns: C^T = B^T A with B
// copied into rows first, then C^T copied back by rows. GFLOP/s of that
// whole sequence, against the transposed kernel on C = A^T B.
Rates MeasureSwapped(int64_t m, int64_t n, int64_t k) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  Buffer a(k * m, 0.5f), b(k * n, 0.25f), b_rows(k * n), c(m * n), c_t(m * n);
  const memory::desc a_t({m, k}, memory::data_type::f32, memory::dims{1, m});  // A stored (k, m)
  const memory::desc a_plain({k, m}, memory::data_type::f32, memory::dims{m, 1});
  const memory::desc b_md({k, n}, memory::data_type::f32, memory::dims{n, 1});
  const memory::desc b_t({n, k}, memory::data_type::f32, memory::dims{1, n});  // B^T of B (k, n)
  const memory::desc b_r({n, k}, memory::data_type::f32, memory::dims{k, 1});
  const memory::desc c_md({m, n}, memory::data_type::f32, memory::dims{n, 1});
  const memory::desc c_by_columns({m, n}, memory::data_type::f32, memory::dims{1, m});
  const memory::desc ct_md({n, m}, memory::data_type::f32, memory::dims{m, 1});
  dnnl::matmul transposed(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_t, b_md, c_md), engine));
  dnnl::matmul swapped(dnnl::matmul::primitive_desc(dnnl::matmul::desc(b_r, a_plain, ct_md), engine));
  memory am(a_t, engine, a.data), ap(a_plain, engine, a.data), bm(b_md, engine, b.data),
      btm(b_t, engine, b.data), brm(b_r, engine, b_rows.data), cm(c_md, engine, c.data),
      ccols(c_by_columns, engine, c_t.data), ctm(ct_md, engine, c_t.data);
  dnnl::reorder copy_b(btm, brm), copy_c(ccols, cm);
  const double gflop = 2.0 * m * n * k / 1e9;
  const int reps = std::max(1, static_cast<int>(2.0 / gflop));
  const double t_transposed = MillisPerCall(
      [&] {
        transposed.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
        stream.wait();
      },
      reps);
  const double t_swapped = MillisPerCall(
      [&] {
        copy_b.execute(stream, btm, brm);
        swapped.execute(stream, {{DNNL_ARG_SRC, brm}, {DNNL_ARG_WEIGHTS, ap}, {DNNL_ARG_DST, ctm}});
        copy_c.execute(stream, ccols, cm);
        stream.wait();
      },
      reps);
  return {gflop / t_transposed * 1e3, gflop / t_swapped * 1e3};
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  omp_set_num_threads(1);
  const tvlab::FmaPeak peak = tvlab::MeasureFmaPeak(5);
  omp_set_num_threads(threads);
  std::printf("cpu: %s; FMA peak %.1f GFLOP/s (one thread); %d thread(s); oneDNN AVX512_CORE: %s\n",
              tvlab::CpuModel().c_str(), peak.flops_per_second / 1e9, threads,
              tvlab::onednn::OnednnHasAvx512Core() ? "yes" : "no");
  std::printf("%5s %5s %5s %14s %14s %8s %s\n", "m", "n", "k", "transposed", "rows_first", "speedup",
              "taken");
  for (int64_t m : {768, 1024, 4096}) {
    for (int64_t n : {64, 128, 256, 384}) {
      const int64_t k = 2048;
      tvlab::GemmDesc d;
      d.m = m, d.n = n, d.k = k, d.trans_a = true;
      const Rates r = Measure(m, n, k);
      std::printf("%5lld %5lld %5lld %9.1f GF/s %9.1f GF/s %7.2fx %s\n", static_cast<long long>(m),
                  static_cast<long long>(n), static_cast<long long>(k), r.transposed, r.rows_first,
                  r.rows_first / r.transposed,
                  tvlab::onednn::TransposesAFirst(d, tvlab::onednn::OnednnHasAvx512Core()) ? "rows first"
                                                                                          : "transposed");
    }
  }
  std::printf("\nfew rows, many columns: the transposed kernel against the swapped route\n");
  std::printf("%5s %5s %5s %14s %14s %8s %s\n", "m", "n", "k", "transposed", "swapped", "speedup",
              "taken");
  for (int64_t m : {128, 256, 512}) {
    for (int64_t n : {512, 1024, 2048}) {
      const int64_t k = 4096;
      tvlab::GemmDesc d;
      d.m = m, d.n = n, d.k = k, d.trans_a = true;
      const Rates r = MeasureSwapped(m, n, k);
      std::printf("%5lld %5lld %5lld %9.1f GF/s %9.1f GF/s %7.2fx %s\n", static_cast<long long>(m),
                  static_cast<long long>(n), static_cast<long long>(k), r.transposed, r.rows_first,
                  r.rows_first / r.transposed,
                  tvlab::onednn::SwapsOperands(d, tvlab::onednn::OnednnHasAvx512Core()) ? "swapped"
                                                                                       : "transposed");
    }
  }
  return 0;
}
