// cpu_onednn's two tiled fused attention kernels side by side: the sgemm
// kernel (tiled_attention.h) and the AVX-512 one for plain attention
// (tiled_attention_avx512.h), forward and backward, alternated call by call,
// the best of REPS each, per shape (causal, token-major, the GPT config's
// batch 16 x 8 heads unless a row says otherwise), with the CPU model, the
// measured FMA peak, whether cpu_onednn gives the shape to the AVX-512
// kernel and the largest difference between the two kernels' results.
// The limits in tiled_attention_avx512.h are read off this table
// (bench/README.md).
// usage: bazel run //bench:tiled_attention_bench -- [REPS] [DROPOUT]   (pin it: taskset -c 0)
// DROPOUT (default 0): the attention dropout probability of every call.

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "framework/backend/cpu_onednn/tiled_attention.h"
#include "framework/backend/cpu_onednn/tiled_attention_avx512.h"
#include "framework/core/cpu_features.h"
#include "framework/core/rng.h"
#include "framework/perf/fma_peak.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  int64_t batch, heads, kv_heads, queries, keys, head_dim;
};

struct Buffers {
  std::vector<float> q, k, v, dout, out, lse, dq, dk, dv;
};

std::vector<float> Values(int64_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) x = static_cast<float>((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
  return v;
}

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Forward and backward of `d` with the AVX-512 kernel (`avx512`) or the
// sgemm one; adds the seconds of each to best[0], best[1] (minimum).
void Run(const tvlab::FusedAttentionDesc& d, bool avx512, Buffers& b, double* best) {
  const auto t0 = Clock::now();
  if (avx512) {
    tvlab::onednn::TiledAttentionForwardAvx512(d, b.q.data(), b.k.data(), b.v.data(), b.out.data(), b.lse.data());
  } else {
    tvlab::TiledAttentionForward(d, b.q.data(), b.k.data(), b.v.data(), b.out.data(), b.lse.data());
  }
  const auto t1 = Clock::now();
  if (avx512) {
    tvlab::onednn::TiledAttentionBackwardAvx512(d, b.q.data(), b.k.data(), b.v.data(), b.out.data(), b.lse.data(),
                                                b.dout.data(), b.dq.data(), b.dk.data(), b.dv.data());
  } else {
    tvlab::TiledAttentionBackward(d, b.q.data(), b.k.data(), b.v.data(), b.out.data(), b.lse.data(), b.dout.data(),
                                  b.dq.data(), b.dk.data(), b.dv.data(), nullptr);
  }
  const auto t2 = Clock::now();
  best[0] = std::min(best[0], Seconds(t0, t1));
  best[1] = std::min(best[1], Seconds(t1, t2));
}

float MaxDifference(const Buffers& a, const Buffers& b) {
  float m = 0.0f;
  for (auto member : {&Buffers::out, &Buffers::dq, &Buffers::dk, &Buffers::dv})
    for (size_t i = 0; i < (a.*member).size(); ++i) m = std::max(m, std::fabs((a.*member)[i] - (b.*member)[i]));
  return m;
}

void Measure(const Shape& s, int reps, float dropout) {
  tvlab::FusedAttentionDesc d;
  if (dropout > 0.0f) {
    d.dropout = dropout;
    d.dropout_stream = tvlab::RngStream(1, tvlab::RngPurpose::kDropout, 1);
  }
  d.batch = s.batch, d.heads = s.heads, d.kv_heads = s.kv_heads, d.queries = s.queries, d.keys = s.keys;
  d.head_dim = d.value_dim = s.head_dim, d.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  d.mask.causal = true, d.mask.causal_offset = s.keys - s.queries, d.token_major = true;
  const int64_t nq = s.batch * s.heads * s.queries * s.head_dim, nk = s.batch * s.kv_heads * s.keys * s.head_dim;
  Buffers b[2];
  for (Buffers& x : b)
    x = {Values(nq, 1), Values(nk, 2), Values(nk, 3), Values(nq, 4), std::vector<float>(nq),
         std::vector<float>(s.batch * s.heads * s.queries), std::vector<float>(nq), std::vector<float>(nk),
         std::vector<float>(nk)};
  const bool takes = tvlab::onednn::TiledAttentionAvx512Takes(d) && tvlab::onednn::TiledAttentionAvx512TakesBackward(d);
  const bool runs = tvlab::onednn::TiledAttentionAvx512Computes(d);
  double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}};
  for (int r = 0; r < reps; ++r)
    for (int kernel = 0; kernel < (runs ? 2 : 1); ++kernel) Run(d, kernel == 1, b[kernel], best[kernel]);
  std::printf("%3lld %2lld %2lld %5lld %5lld %3lld %9.3f %9.3f", static_cast<long long>(s.batch),
              static_cast<long long>(s.heads), static_cast<long long>(s.kv_heads), static_cast<long long>(s.queries),
              static_cast<long long>(s.keys), static_cast<long long>(s.head_dim), best[0][0] * 1e3, best[0][1] * 1e3);
  if (runs) {
    std::printf(" %9.3f %9.3f %6.2fx %6.2fx %6.2fx %9.1e %s\n", best[1][0] * 1e3, best[1][1] * 1e3,
                best[0][0] / best[1][0], best[0][1] / best[1][1],
                (best[0][0] + best[0][1]) / (best[1][0] + best[1][1]), MaxDifference(b[0], b[1]), takes ? "yes" : "no");
  } else {
    std::printf("  (no AVX-512F)\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  const float dropout = argc > 2 ? std::strtof(argv[2], nullptr) : 0.0f;
  const tvlab::FmaPeak peak = tvlab::MeasureFmaPeak(5);
  std::printf("cpu: %s; FMA peak %.1f GFLOP/s (one thread); %d thread(s); causal, token-major, dropout %g; ms a call\n",
              tvlab::CpuModel().c_str(), peak.flops_per_second / 1e9, omp_get_max_threads(), dropout);
  std::printf("%3s %2s %2s %5s %5s %3s %9s %9s %9s %9s %7s %7s %7s %9s %s\n", "B", "H", "G", "T", "S", "hs",
              "sgemm_fw", "sgemm_bw", "avx_fw", "avx_bw", "fw", "bw", "both", "max_diff", "taken");
  const Shape shapes[] = {
      {16, 8, 8, 256, 256, 32},  // the GPT config's
      {16, 8, 8, 256, 256, 16},   {16, 8, 8, 256, 256, 64}, {16, 8, 2, 256, 256, 32}, {16, 8, 8, 64, 64, 32},
      {4, 8, 8, 1024, 1024, 32},  {4, 8, 8, 1024, 1024, 64}, {2, 8, 8, 2048, 2048, 32}, {2, 8, 8, 2048, 2048, 64},
      {1, 8, 8, 4096, 4096, 16},  {4, 8, 8, 1, 1024, 32},    {4, 8, 8, 8, 1024, 32},
  };
  for (const Shape& s : shapes) Measure(s, reps, dropout);
  return 0;
}
