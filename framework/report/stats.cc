#include "framework/report/stats.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tvlab {

double StatisticScale(const std::vector<const std::vector<double>*>& groups) {
  double largest = 0;
  for (const std::vector<double>* g : groups)
    for (double v : *g) largest = std::max(largest, std::abs(v));
  return largest > kLargeStatisticValue && std::isfinite(largest) ? largest : 1.0;
}

SeedStats Summarize(const std::vector<double>& values) {
  SeedStats s;
  s.n = static_cast<int>(values.size());
  if (s.n == 0) return s;
  const double scale = StatisticScale({&values});
  double sum = 0;
  for (double v : values) sum += v / scale;
  const double mean = sum / s.n;  // in units of `scale`
  s.mean = mean * scale;
  if (s.n < 2) return s;
  double squares = 0;
  for (double v : values) squares += (v / scale - mean) * (v / scale - mean);
  s.std = std::sqrt(squares / (s.n - 1)) * scale;
  return s;
}

namespace {

// "%.3f" below 1e15 in magnitude; "%.3e" above, where fixed notation would
// print hundreds of digits (a corrupt or diverged 1e308).
std::string Fixed(double v, int digits, bool sign = false) {
  if (std::abs(v) >= 1e15) return absl::StrFormat(sign ? "%+.*e" : "%.*e", digits, v);
  return absl::StrFormat(sign ? "%+.*f" : "%.*f", digits, v);
}

}  // namespace

std::string FormatMeanStd(const SeedStats& s, int digits) {
  if (s.n == 0) return "";
  if (s.n == 1) return Fixed(s.mean, digits);
  return absl::StrCat(Fixed(s.mean, digits), " ± ", Fixed(s.std, digits));
}

std::string FormatDelta(double delta, int digits) {
  std::string text = Fixed(delta, digits, /*sign=*/true);
  // "+0.000" and "-0.000" both mean "no difference at this precision".
  if (text.find_first_not_of("+-0.") == std::string::npos) text = text.substr(1);
  return text;
}

}  // namespace tvlab
