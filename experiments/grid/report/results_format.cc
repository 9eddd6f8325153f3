#include "experiments/grid/report/results_format.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace tvlab {

std::string FormatExact(double value) { return absl::StrFormat("%.9g", value); }

std::string FormatRoundTrip(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string text;
  for (int precision = 1; precision <= 17; ++precision) {
    text = absl::StrFormat("%.*g", precision, value);
    if (std::strtod(text.c_str(), nullptr) == value) break;
  }
  return text;
}

std::string FormatSi(double value) {
  const double a = std::abs(value);
  if (a >= 1e9) return absl::StrFormat("%.3gG", value / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.3gM", value / 1e6);
  if (a >= 1e3) return absl::StrFormat("%.3gk", value / 1e3);
  return absl::StrFormat("%.3g", value);
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string OneLine(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  return absl::StrJoin(lines, "; ");
}

std::string MdCell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 140 ? line.substr(0, 137) + "..." : line;
}

std::string FailureSummary(const std::string& error) {
  for (absl::string_view line : absl::StrSplit(error, '\n')) {
    if (absl::StartsWith(line, "error: ")) return FirstLine(std::string(line.substr(7)));
  }
  return FirstLine(error);
}

std::string RelativeTo(const std::string& path, const std::string& base) {
  std::error_code ignored;
  std::string rel = std::filesystem::relative(path, base, ignored).string();
  return rel.empty() ? path : rel;
}

}  // namespace tvlab
