#include "framework/data/bleu.h"

#include <cmath>
#include <functional>
#include <map>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace tvlab {
namespace {

using Ngrams = std::map<std::vector<std::string>, int>;

Ngrams Count(const std::vector<std::string>& words, int n) {
  Ngrams counts;
  for (size_t i = 0; i + n <= words.size(); ++i)
    counts[std::vector<std::string>(words.begin() + i, words.begin() + i + n)]++;
  return counts;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsPeriodOrComma(char c) { return c == '.' || c == ','; }

// 13a's first class, [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII symbols and
// punctuation except ' , - . (and space, which only adds spaces).
bool IsSplitSymbol(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

// Python's re.sub(r'(A)(B)', repl, s) for one-character groups A and B:
// non-overlapping matches from left to right.
std::string SubstitutePairs(const std::string& s, const std::function<bool(char)>& first,
                            const std::function<bool(char)>& second,
                            const std::function<std::string(char, char)>& replacement) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      out += replacement(s[i], s[i + 1]);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace

std::string Tokenize13a(const std::string& raw) {
  std::string line = absl::StrReplaceAll(raw, {{"<skipped>", ""}, {"-\n", ""}});
  line = absl::StrReplaceAll(line, {{"\n", " "}});
  if (line.find('&') != std::string::npos) {
    line = absl::StrReplaceAll(line, {{"&quot;", "\""}});
    line = absl::StrReplaceAll(line, {{"&amp;", "&"}});
    line = absl::StrReplaceAll(line, {{"&lt;", "<"}});
    line = absl::StrReplaceAll(line, {{"&gt;", ">"}});
  }
  line = " " + line + " ";
  std::string spaced;
  for (char c : line) {
    if (IsSplitSymbol(c)) {
      spaced += ' ';
      spaced += c;
      spaced += ' ';
    } else {
      spaced += c;
    }
  }
  auto not_digit = [](char c) { return !IsDigit(c); };
  // Period and comma unless preceded by a digit: ([^0-9])([\.,]) -> "\1 \2 ".
  spaced = SubstitutePairs(spaced, not_digit, IsPeriodOrComma,
                           [](char a, char b) { return std::string{a, ' ', b, ' '}; });
  // Period and comma unless followed by a digit: ([\.,])([^0-9]) -> " \1 \2".
  spaced = SubstitutePairs(spaced, IsPeriodOrComma, not_digit,
                           [](char a, char b) { return std::string{' ', a, ' ', b}; });
  // Dash after a digit: ([0-9])(-) -> "\1 \2 ".
  spaced = SubstitutePairs(spaced, IsDigit, [](char c) { return c == '-'; },
                           [](char a, char b) { return std::string{a, ' ', b, ' '}; });
  std::vector<std::string> words = absl::StrSplit(spaced, absl::ByAnyChar(" \t\n\r\f\v"), absl::SkipEmpty());
  return absl::StrJoin(words, " ");
}

void AddBleuStatistics(const std::string& hypothesis, const std::string& reference, BleuStatistics* stats) {
  std::vector<std::string> hyp = absl::StrSplit(Tokenize13a(hypothesis), ' ', absl::SkipEmpty());
  std::vector<std::string> ref = absl::StrSplit(Tokenize13a(reference), ' ', absl::SkipEmpty());
  stats->hyp_length += hyp.size();
  stats->ref_length += ref.size();
  for (int n = 1; n <= 4; ++n) {
    Ngrams h = Count(hyp, n), r = Count(ref, n);
    for (const auto& [gram, count] : h) {
      auto it = r.find(gram);
      stats->matches[n - 1] += std::min(count, it == r.end() ? 0 : it->second);  // clipped
      stats->totals[n - 1] += count;
    }
  }
}

double BleuFromStatistics(const BleuStatistics& stats) {
  const double* matches = stats.matches;
  const double* totals = stats.totals;
  // No output, or no n-gram of any order matching: 0 (sacrebleu's early stop).
  if (stats.hyp_length == 0 || matches[0] + matches[1] + matches[2] + matches[3] == 0) return 0.0;
  double log_precision = 0, smoothing = 1;
  for (int n = 0; n < 4; ++n) {
    if (totals[n] == 0) return 0.0;
    if (matches[n] == 0) {
      smoothing *= 2;  // 'exp': the k-th order without a match counts 1 / (2^k * total)
      log_precision += 0.25 * std::log(1.0 / (smoothing * totals[n]));
    } else {
      log_precision += 0.25 * std::log(matches[n] / totals[n]);
    }
  }
  const double brevity =
      stats.hyp_length < stats.ref_length ? std::exp(1.0 - stats.ref_length / stats.hyp_length) : 1.0;
  return brevity * std::exp(log_precision);
}

double CorpusBleu(const std::vector<std::string>& hypotheses,
                  const std::vector<std::string>& references) {
  BleuStatistics stats;
  for (size_t i = 0; i < hypotheses.size() && i < references.size(); ++i)
    AddBleuStatistics(hypotheses[i], references[i], &stats);
  return BleuFromStatistics(stats);
}

}  // namespace tvlab
