#include "framework/perf/peak.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "framework/core/cpu_features.h"

namespace tvlab {
namespace {

// fma_peak.txt; under an instruction-set cap below what the CPU has
// (cpu_features.h), fma_peak.<isa>.txt, so that a capped run neither
// rewrites nor reads the uncapped peak.
// The bf16 dot-product peak (Bf16DotIsa) has its own file,
// bf16_dot_peak.txt.
std::string CacheFile(const std::string& isa) {
  if (isa == "avx512bf16") return "bf16_dot_peak.txt";
  return IsaCapLowersCpu() ? absl::StrCat("fma_peak.", isa, ".txt") : "fma_peak.txt";
}

// The cache file: three "key: value" lines.
//   cpu_model: AMD EPYC 9R14 96-Core Processor
//   isa: avx512f
//   flops_per_second: 118300000000
struct CacheEntry {
  std::string cpu_model, isa;
  double flops_per_second = 0;
};

// The entry of `text`, or why it does not parse.
absl::StatusOr<CacheEntry> ParseCache(const std::string& text) {
  CacheEntry entry;
  bool has_model = false, has_isa = false, has_rate = false;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos)
      return absl::DataLossError(absl::StrCat("line ", number, " is not 'key: value'"));
    const std::string key(absl::StripAsciiWhitespace(line.substr(0, colon)));
    const std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    if (key == "cpu_model") {
      entry.cpu_model = value, has_model = true;
    } else if (key == "isa") {
      entry.isa = value, has_isa = true;
    } else if (key == "flops_per_second") {
      has_rate = absl::SimpleAtod(value, &entry.flops_per_second) && entry.flops_per_second > 0;
      if (!has_rate) return absl::DataLossError(absl::StrCat("line ", number, ": '", value, "' is not a rate > 0"));
    } else {
      return absl::DataLossError(absl::StrCat("line ", number, ": unknown key '", key, "'"));
    }
  }
  if (!has_model || !has_isa || !has_rate)
    return absl::DataLossError("cpu_model, isa or flops_per_second is missing");
  return entry;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// The cache at `path` when it holds a peak for this CPU model and ISA;
// otherwise nothing, and *note says why when a file was there.
std::optional<FmaPeak> ReadCache(const std::string& path, const std::string& cpu_model, const std::string& isa,
                                 std::string* note) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<CacheEntry> entry = ParseCache(text.str());
  if (!entry.ok()) {
    *note = absl::StrCat("the cached peak ", path, " does not parse (", entry.status().message(), ")");
    return std::nullopt;
  }
  if (entry->cpu_model != cpu_model || entry->isa != isa) {
    *note = absl::StrCat("the cached peak ", path, " is for '", entry->cpu_model, "' (", entry->isa, "), not this '",
                         cpu_model, "' (", isa, ")");
    return std::nullopt;
  }
  return FmaPeak{entry->flops_per_second, entry->isa};
}

// Writes `peak` to result->path (whole or not at all); a failure is said
// in result->note.
void WriteCache(const std::string& dir, const std::string& cpu_model, const FmaPeak& peak, CachedFmaPeak* result) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const std::string temporary = result->path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << "cpu_model: " << cpu_model << "\nisa: " << peak.isa
        << absl::StrFormat("\nflops_per_second: %.6e\n", peak.flops_per_second);
    if (!out) error = std::make_error_code(std::errc::io_error);
  }
  if (!error) std::filesystem::rename(temporary, result->path, error);
  if (error)
    absl::StrAppend(&result->note, result->note.empty() ? "" : "; ", "could not cache the peak in ", result->path,
                    " (", error.message(), "): it is measured again next run");
}

}  // namespace

CachedFmaPeak ReadOrMeasureFmaPeak(const std::string& dir, const std::string& cpu_model, const std::string& isa,
                                   const std::function<FmaPeak()>& measure) {
  CachedFmaPeak result;
  result.path = (std::filesystem::path(dir) / CacheFile(isa)).string();
  if (std::optional<FmaPeak> cached = ReadCache(result.path, cpu_model, isa, &result.note)) {
    result.peak = *cached;
    return result;
  }
  if (!result.note.empty()) result.note += "; measured again and rewritten";
  result.peak = measure();
  result.measured = true;
  WriteCache(dir, cpu_model, result.peak, &result);
  return result;
}

CachedFmaPeak RecordFmaPeak(const std::string& dir, const std::string& cpu_model, const FmaPeak& measured) {
  CachedFmaPeak result;
  result.path = (std::filesystem::path(dir) / CacheFile(measured.isa)).string();
  std::optional<FmaPeak> cached = ReadCache(result.path, cpu_model, measured.isa, &result.note);
  if (measured.flops_per_second <= 0 || (cached && cached->flops_per_second >= measured.flops_per_second)) {
    result.peak = cached ? *cached : measured;
    return result;
  }
  if (!result.note.empty()) result.note += "; rewritten";
  result.peak = measured;
  result.measured = true;
  WriteCache(dir, cpu_model, measured, &result);
  return result;
}

std::string PeakCacheDir() {
  if (std::string dir = Env("TVLAB_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = Env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/tvlab";
  return Env("HOME") + "/.cache/tvlab";
}

absl::StatusOr<DevicePeak> HostPeak(int threads, const std::string& precision) {
  DevicePeak peak;
  peak.device = CpuModel();
  const std::string override_text = Env("TVLAB_PEAK_FLOPS");
  double per_core = 0;
  const bool bf16_dots = precision == "bf16" && !Bf16DotIsa().empty();
  std::string isa = bf16_dots ? Bf16DotIsa() : FmaIsa();
  if (override_text == "off") {
    peak.unknown_why = "TVLAB_PEAK_FLOPS=off";
    return peak;
  }
  if (!override_text.empty()) {
    if (!absl::SimpleAtod(override_text, &per_core) || !(per_core > 0))
      return absl::InvalidArgumentError(absl::StrCat(
          "TVLAB_PEAK_FLOPS='", override_text,
          "' is neither a per-core peak in FLOP/s (e.g. 1.2e11) nor 'off'; unset it to measure the peak"));
    peak.source = "TVLAB_PEAK_FLOPS";
  } else if (isa.empty()) {
    peak.unknown_why = "this CPU has neither AVX-512 nor AVX2+FMA";
    return peak;
  } else {
    const CachedFmaPeak cached = ReadOrMeasureFmaPeak(PeakCacheDir(), peak.device, isa, [bf16_dots] {
      return bf16_dots ? MeasureBf16DotPeak() : MeasureFmaPeak();
    });
    per_core = cached.peak.flops_per_second;
    peak.source = cached.measured ? absl::StrCat("measured, cached in ", cached.path)
                                  : absl::StrCat("cached in ", cached.path);
    peak.note = cached.note;
  }
  peak.flops_per_second = per_core * threads;
  peak.basis = absl::StrCat(bf16_dots ? "bf16 dot products" : "fp32 FMA", isa.empty() ? "" : " " + isa, " x ", threads,
                            " thread(s)");
  return peak;
}

DevicePeak GpuPeak(const std::string& device_name, const std::string& precision) {
  // Dense (no structured sparsity) peaks from NVIDIA's datasheets, in
  // TFLOP/s. Matched by the first entry whose key the name contains.
  struct Row {
    const char* key;
    double fp32, tf32, bf16;
  };
  static const Row kTable[] = {
      {"H200", 66.9, 494.7, 989.4},       // H200 SXM
      {"H100 PCIe", 51.2, 378.0, 756.0},  // before "H100": the PCIe card
      {"H100", 66.9, 494.7, 989.4},       // H100 SXM5
      {"A100", 19.5, 156.0, 312.0},       // A100 SXM4 and PCIe
  };
  DevicePeak peak;
  peak.device = device_name;
  for (const Row& row : kTable) {
    if (device_name.find(row.key) == std::string::npos) continue;
    const double tflops = precision == "fp32" ? row.fp32 : precision == "tf32" ? row.tf32
                                                         : precision == "bf16" ? row.bf16 : 0.0;
    if (tflops == 0) break;
    peak.flops_per_second = tflops * 1e12;
    peak.basis = absl::StrCat(precision, " dense");
    peak.source = "datasheet table (framework/perf/peak.cc)";
    return peak;
  }
  peak.unknown_why = absl::StrCat("unknown peak: '", device_name, "' at ", precision,
                                  " is not in the table of framework/perf/peak.cc");
  return peak;
}

double ModelFlopsUtilisation(double achieved_flops_per_second, const DevicePeak& peak) {
  return peak.flops_per_second > 0 ? achieved_flops_per_second / peak.flops_per_second : 0.0;
}

}  // namespace tvlab
