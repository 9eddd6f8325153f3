#ifndef TVLAB_FRAMEWORK_PERF_PEAK_H_
#define TVLAB_FRAMEWORK_PERF_PEAK_H_

// The peak a run's model FLOP utilisation (MFU) is a fraction of, and the
// fraction itself:
//
// * CPU backends: the measured single-core FP32 FMA peak (fma_peak.h) times
//   runtime.threads (for runtime.precision bf16 on a CPU with AVX512_BF16,
//   the measured bf16 dot-product peak instead, cached in
//   bf16_dot_peak.txt). Measured once per machine and cached in
//   <cache dir>/fma_peak.txt with the CPU model and the ISA it was measured
//   with (fma_peak.<isa>.txt under an instruction-set cap below the CPU's,
//   ONEDNN_MAX_CPU_ISA: framework/core/cpu_features.h); a file for another
//   CPU model or ISA, or one that does not parse,
//   is measured again and rewritten (and the run says why). Every later
//   measurement of bench/fma_peak or step_gemm_bound raises it
//   when it is higher, so the cache keeps the best rate this machine has
//   shown: on a shared host a neighbour only ever slows a measurement down
//   (this project's 2-vCPU Xeon measured anywhere from 109 to 214 GFLOP/s),
//   and a fraction of a dip overstates a run. The cache dir
//   is $TVLAB_CACHE_DIR, else $XDG_CACHE_HOME/tvlab, else ~/.cache/tvlab.
//   $TVLAB_PEAK_FLOPS overrides it: a per-core rate in FLOP/s (e.g.
//   1.2e11) is used as given, "off" skips the peak (no MFU is reported,
//   and nothing is measured).
// * gpu_cuda: the GPU's dense peak for runtime.precision from a table of
//   datasheet numbers keyed by the device's name; a GPU not in the table
//   has an unknown peak (said, never guessed).

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "framework/perf/fma_peak.h"

namespace tvlab {

struct DevicePeak {
  double flops_per_second = 0;  // 0: unknown (unknown_why says why)
  std::string device;           // the CPU model or the GPU's name
  std::string basis;            // what it counts, e.g. "fp32 FMA avx512f x 1 thread(s)"
  std::string source;           // "measured", "cached in <path>", "TVLAB_PEAK_FLOPS", "datasheet table"
  std::string unknown_why;
  // Remarks for the progress output (a cache file measured again, and why).
  std::string note;
};

// What was cached for this machine, or measured now with `measure` (and
// written to <dir>/fma_peak.txt, or fma_peak.<isa>.txt under a cap,
// creating dir). Never fails: a file that
// cannot be read or written is said in `note`.
struct CachedFmaPeak {
  FmaPeak peak;
  bool measured = false;  // false: read from the cache file
  std::string path;       // <dir>/fma_peak.txt (fma_peak.<isa>.txt under a cap)
  std::string note;
};
CachedFmaPeak ReadOrMeasureFmaPeak(const std::string& dir, const std::string& cpu_model, const std::string& isa,
                                   const std::function<FmaPeak()>& measure);

// A peak measured now, kept in the same file if it beats what is
// cached there for this CPU model and ISA (or nothing usable is): the
// cache's peak afterwards, `measured` true when it was rewritten. A peak
// of 0 (no FMA ISA) is never written.
CachedFmaPeak RecordFmaPeak(const std::string& dir, const std::string& cpu_model, const FmaPeak& measured);

// The cache dir from the environment (see above).
std::string PeakCacheDir();

// A CPU backend's peak for `threads` threads, from $TVLAB_PEAK_FLOPS or the
// cache (measuring on a miss). For runtime.precision "bf16" on a CPU with
// AVX512_BF16 (Bf16DotIsa), the bf16 dot-product peak (MeasureBf16DotPeak,
// cached in <dir>/bf16_dot_peak.txt): about twice the FMA peak, the rate
// bf16_medium_gemm.h's products run at. An error only for a
// $TVLAB_PEAK_FLOPS that is neither "off" nor a positive number.
absl::StatusOr<DevicePeak> HostPeak(int threads, const std::string& precision = "fp32");

// A GPU's dense peak for `precision` ("fp32", "tf32", "bf16") from the
// table; unknown (flops_per_second 0, unknown_why set) for a device or
// precision it does not list.
DevicePeak GpuPeak(const std::string& device_name, const std::string& precision);

// achieved / peak; 0 when the peak is unknown.
double ModelFlopsUtilisation(double achieved_flops_per_second, const DevicePeak& peak);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_PERF_PEAK_H_
