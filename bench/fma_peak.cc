// Measures this machine's single-thread FP32 FMA peak (GFLOP/s), printed
// beside benchmark numbers so that fractions of peak are of a measured peak
// (bench/README.md). The measurement is framework/perf/fma_peak.h's, the
// one a run's MFU is a fraction of. Best of five runs; it also raises the
// per-machine cache that runs read when it beats it (peak.h: the cache
// keeps the best this machine has shown).
// usage: fma_peak            prints the peak measured now
//        fma_peak --best     prints the best of that and the cache's: what
//                            the benchmarks divide by, so that a dip of a
//                            shared host does not inflate their fractions

#include <cstdio>
#include <cstring>

#include "framework/perf/fma_peak.h"
#include "framework/perf/peak.h"

int main(int argc, char** argv) {
  const bool best = argc > 1 && std::strcmp(argv[1], "--best") == 0;
  if (argc > 2 || (argc == 2 && !best)) {
    std::fprintf(stderr, "usage: %s [--best]\n", argv[0]);
    return 2;
  }
  const tvlab::FmaPeak now = tvlab::MeasureFmaPeak(5);
  const tvlab::CachedFmaPeak cached = tvlab::RecordFmaPeak(tvlab::PeakCacheDir(), tvlab::CpuModel(), now);
  if (!cached.note.empty()) std::fprintf(stderr, "fma_peak: %s\n", cached.note.c_str());
  std::printf("%.1f\n", (best ? cached.peak : now).flops_per_second / 1e9);
  return now.flops_per_second > 0.0 ? 0 : 1;
}
