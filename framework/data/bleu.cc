#include "framework/data/bleu.h"

#include <cmath>
#include <map>

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

}  // namespace

double CorpusBleu(const std::vector<std::string>& hypotheses,
                  const std::vector<std::string>& references) {
  double matches[4] = {0, 0, 0, 0}, totals[4] = {0, 0, 0, 0};
  double hyp_length = 0, ref_length = 0;
  for (size_t i = 0; i < hypotheses.size() && i < references.size(); ++i) {
    std::vector<std::string> hyp = absl::StrSplit(hypotheses[i], ' ', absl::SkipWhitespace());
    std::vector<std::string> ref = absl::StrSplit(references[i], ' ', absl::SkipWhitespace());
    hyp_length += hyp.size();
    ref_length += ref.size();
    for (int n = 1; n <= 4; ++n) {
      Ngrams h = Count(hyp, n), r = Count(ref, n);
      for (const auto& [gram, count] : h) {
        auto it = r.find(gram);
        matches[n - 1] += std::min(count, it == r.end() ? 0 : it->second);  // clipped
        totals[n - 1] += count;
      }
    }
  }
  double log_precision = 0;
  for (int n = 0; n < 4; ++n) {
    if (matches[n] == 0 || totals[n] == 0) return 0.0;
    log_precision += 0.25 * std::log(matches[n] / totals[n]);
  }
  const double brevity = hyp_length < ref_length ? std::exp(1.0 - ref_length / hyp_length) : 1.0;
  return brevity * std::exp(log_precision);
}

}  // namespace tvlab
