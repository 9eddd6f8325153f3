#include "framework/report/stats.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace tvlab {

SeedStats Summarize(const std::vector<double>& values) {
  SeedStats s;
  s.n = static_cast<int>(values.size());
  if (s.n == 0) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  if (s.n < 2) return s;
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(squares / (s.n - 1));
  return s;
}

std::string FormatMeanStd(const SeedStats& s, int digits) {
  if (s.n == 0) return "";
  if (s.n == 1) return absl::StrFormat("%.*f", digits, s.mean);
  return absl::StrFormat("%.*f ± %.*f", digits, s.mean, digits, s.std);
}

std::string FormatDelta(double delta, int digits) {
  std::string text = absl::StrFormat("%+.*f", digits, delta);
  // "+0.000" and "-0.000" both mean "no difference at this precision".
  if (text.find_first_not_of("+-0.") == std::string::npos) text = text.substr(1);
  return text;
}

}  // namespace tvlab
