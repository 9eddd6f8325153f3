// Measures this machine's single-thread FP32 FMA peak (GFLOP/s), printed
// beside benchmark numbers so that fractions of peak are of a measured peak
// (bench/README.md). The measurement is framework/perf/fma_peak.h's, the
// one a run's MFU is a fraction of (runs read it from a per-machine cache;
// this measures afresh). Best of five runs.

#include <cstdio>

#include "framework/perf/fma_peak.h"

int main() {
  const tvlab::FmaPeak peak = tvlab::MeasureFmaPeak(5);
  std::printf("%.1f\n", peak.flops_per_second / 1e9);
  return peak.flops_per_second > 0.0 ? 0 : 1;
}
