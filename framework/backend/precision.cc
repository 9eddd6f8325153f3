#include "framework/backend/precision.h"

namespace tvlab {

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

std::optional<Precision> ParsePrecision(const std::string& name) {
  for (Precision p : AllPrecisions())
    if (name == PrecisionName(p)) return p;
  return std::nullopt;
}

std::vector<Precision> AllPrecisions() {
  return {Precision::kFp32, Precision::kTf32, Precision::kBf16};
}

}  // namespace tvlab
