// How close to the FMA peak a decoder's training step can come with
// cpu_onednn's GEMMs: every product of the step's linear layers (forward
// y = x W^T + b, input gradient dY W, weight gradient dY^T X), each called
// through OnednnBackend::Gemm / GemmBias exactly as autograd's Linear calls
// it, timed alone and repeated. Their summed time is what the step's GEMMs
// cost at their standalone speed; the model's FLOPs (from the cost model's
// FLOPs per token, given) over that time is the MFU the step would reach if
// everything else (attention, norms, activations, optimizer) took no time.
// Issue #33's "GPT config keeps >= 60% of the measured peak" is read against
// this bound; its %peak column is of the best FMA peak measured on this
// machine (framework/perf/peak.h) (bench/README.md, "The GEMM bound of the GPT step").
//
// usage: bazel run //bench:step_gemm_bound -- [d layers d_ff batch T vocab flops_per_token threads]
//   defaults: the GPT config of bench/configs/gpt_byte_lm.pbtxt
//   (256 4 1024 16 256 256 22.4e6 1); pin it (taskset -c 0).

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/aligned_buffer.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/perf/fma_peak.h"
#include "framework/perf/peak.h"

namespace {

using Clock = std::chrono::steady_clock;

using Buffer = tvlab::bench::AlignedBuffer;

// One of the step's products: how many of it a step makes, and its call.
struct Product {
  std::string what;
  int count;
  tvlab::GemmDesc desc;
  bool bias;
};

// The three products of a Linear (in -> out) over `batch` x T tokens, as
// autograd's Linear issues them, `count` of it per step.
void AddLinear(const std::string& name, int64_t in, int64_t out, int64_t batch, int64_t t, int count,
               std::vector<Product>* products) {
  tvlab::GemmDesc forward;  // (B, T, in) x W (out, in)^T + b -> (B, T, out)
  forward.batch = batch, forward.m = t, forward.n = out, forward.k = in, forward.trans_b = true;
  forward.stride_a = t * in, forward.stride_b = 0, forward.stride_c = t * out;
  tvlab::GemmDesc input_grad;  // dY (B, T, out) x W (out, in) -> (B, T, in)
  input_grad.batch = batch, input_grad.m = t, input_grad.n = in, input_grad.k = out;
  input_grad.stride_a = t * out, input_grad.stride_b = 0, input_grad.stride_c = t * in;
  tvlab::GemmDesc weight_grad;  // dY^T (out, B*T) x X (B*T, in) -> (out, in)
  weight_grad.m = out, weight_grad.n = in, weight_grad.k = batch * t, weight_grad.trans_a = true;
  products->push_back({name + " forward", count, forward, true});
  products->push_back({name + " dX", count, input_grad, false});
  products->push_back({name + " dW", count, weight_grad, false});
}

// Best of 3 of the mean seconds of `reps` calls.
double SecondsPerCall(tvlab::OnednnBackend& backend, const Product& p, int reps) {
  const tvlab::GemmDesc& d = p.desc;
  const int64_t a_size = d.batch * d.m * d.k, b_size = d.k * d.n, c_size = d.batch * d.m * d.n;
  Buffer a(a_size, 0.5f), b(b_size, 0.25f), bias(d.n, 0.1f), c(c_size, 0.0f);
  const auto call = [&] {
    if (p.bias) backend.GemmBias(d, a.data, b.data, bias.data, c.data);
    else backend.Gemm(d, a.data, b.data, c.data);
  };
  call();  // creates and caches the primitive, as the first training step does
  double best = 1e30;
  for (int run = 0; run < 3; ++run) {
    const auto start = Clock::now();
    for (int r = 0; r < reps; ++r) call();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count() / reps);
  }
  return best;
}

double Flops(const tvlab::GemmDesc& d) { return 2.0 * d.batch * d.m * d.n * d.k; }

}  // namespace

int main(int argc, char** argv) {
  const auto arg = [&](int i, double fallback) { return argc > i ? std::atof(argv[i]) : fallback; };
  const int64_t d = arg(1, 256), layers = arg(2, 4), d_ff = arg(3, 1024), batch = arg(4, 16),
                t = arg(5, 256), vocab = arg(6, 256);
  const double flops_per_token = arg(7, 22.4e6);
  const int threads = static_cast<int>(arg(8, 1));
  if (argc > 9 || d <= 0 || layers <= 0 || d_ff <= 0 || batch <= 0 || t <= 0 || vocab <= 0 ||
      !(flops_per_token > 0) || threads <= 0) {
    std::fprintf(stderr, "usage: step_gemm_bound [d layers d_ff batch T vocab flops_per_token threads]: "
                         "every value a positive number (defaults: 256 4 1024 16 256 256 22.4e6 1)\n");
    return 2;
  }
  omp_set_num_threads(1);
  const tvlab::FmaPeak now = tvlab::MeasureFmaPeak(5);
  // Fractions are of the best peak this machine has shown (peak.h): a dip
  // of a shared host at the measurement would inflate them.
  const tvlab::FmaPeak peak = tvlab::RecordFmaPeak(tvlab::PeakCacheDir(), tvlab::CpuModel(), now).peak;
  omp_set_num_threads(threads);
  std::printf("cpu: %s; FP32 FMA peak %.1f GFLOP/s now, %.1f the best measured here (one thread, %s); %d thread(s)\n",
              tvlab::CpuModel().c_str(), now.flops_per_second / 1e9, peak.flops_per_second / 1e9,
              peak.isa.c_str(), threads);
  std::printf("decoder d %ld, %ld layers, d_ff %ld, %ld x %ld tokens, vocab %ld\n", static_cast<long>(d),
              static_cast<long>(layers), static_cast<long>(d_ff), static_cast<long>(batch),
              static_cast<long>(t), static_cast<long>(vocab));
  std::vector<Product> products;
  AddLinear("q, k, v, o", d, d, batch, t, static_cast<int>(4 * layers), &products);
  AddLinear("ffn in", d, d_ff, batch, t, static_cast<int>(layers), &products);
  AddLinear("ffn out", d_ff, d, batch, t, static_cast<int>(layers), &products);
  AddLinear("lm head", d, vocab, batch, t, 1, &products);
  tvlab::OnednnBackend backend;
  double step_seconds = 0, step_flops = 0;
  std::printf("%-20s %5s %-28s %9s %9s %7s\n", "product", "count", "m x n x k (batch)", "ms/call", "GFLOP/s", "%peak");
  for (const Product& p : products) {
    const int reps = std::max(3, static_cast<int>(0.3e9 / Flops(p.desc)));
    const double seconds = SecondsPerCall(backend, p, reps);
    const double rate = Flops(p.desc) / seconds;
    step_seconds += p.count * seconds;
    step_flops += p.count * Flops(p.desc);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%ld x %ld x %ld (%ld)%s", static_cast<long>(p.desc.m),
                  static_cast<long>(p.desc.n), static_cast<long>(p.desc.k), static_cast<long>(p.desc.batch),
                  p.desc.trans_a ? " A^T" : p.desc.trans_b ? " B^T" : "");
    std::printf("%-20s %5d %-28s %9.3f %9.1f %6.1f%%\n", p.what.c_str(), p.count, shape, seconds * 1e3,
                rate / 1e9, 100.0 * rate / (peak.flops_per_second * threads));
  }
  const double model_flops = flops_per_token * batch * t;
  const double bound = model_flops / step_seconds / (peak.flops_per_second * threads);
  std::printf("step: %.1f ms in GEMMs at their standalone speed (%.2f of the model's %.2f GFLOP a step)\n",
              step_seconds * 1e3, step_flops / 1e9, model_flops / 1e9);
  std::printf("MFU bound (everything but these GEMMs free): %.1f%%\n", 100.0 * bound);
  std::printf("time left for everything else at 60%% MFU: %.1f ms a step\n",
              (model_flops / (0.6 * peak.flops_per_second * threads) - step_seconds) * 1e3);
  return 0;
}
