#ifndef TVLAB_FRAMEWORK_DATA_BLEU_H_
#define TVLAB_FRAMEWORK_DATA_BLEU_H_

#include <string>
#include <vector>

namespace tvlab {

// Corpus BLEU-4 (Papineni et al. 2002) with one reference per hypothesis,
// computed as sacrebleu's default `sacrebleu.corpus_bleu(hyps, [refs])`
// (BLEU+case.mixed+tok.13a+smooth.exp, no effective order), on a 0-1 scale
// (sacrebleu's score / 100): hypotheses and references are tokenized with
// Tokenize13a, clipped n-gram counts for n = 1..4 are summed over the
// corpus, an order with no match gets the 'exp' smoothing of mteval-v13a
// (its k-th such order counts as 1 / (2^k * total)), and the geometric mean
// is multiplied by the brevity penalty exp(1 - r/c) when c < r. An order with
// no n-gram at all (every hypothesis shorter than n), or no match of any
// order, gives 0.
// bleu_test.cc has worked examples; tests/sacrebleu_parity_test.sh checks
// against sacrebleu itself (docs/interop.md).
double CorpusBleu(const std::vector<std::string>& hypotheses,
                  const std::vector<std::string>& references);

// CorpusBleu's sufficient statistics: sums over the corpus, so the BLEU of a
// corpus split into parts (one per data-parallel rank) is the BLEU of the
// parts' summed statistics, exactly (whole-number sums in doubles).
struct BleuStatistics {
  double matches[4] = {0, 0, 0, 0};  // clipped n-gram matches, n = 1..4
  double totals[4] = {0, 0, 0, 0};   // hypothesis n-grams, n = 1..4
  double hyp_length = 0, ref_length = 0;
  static constexpr int kCount = 10;  // the doubles above, in this order
  double* data() { return matches; }
};
static_assert(sizeof(BleuStatistics) == BleuStatistics::kCount * sizeof(double), "packed doubles");
// Adds one (hypothesis, reference) pair's statistics to `stats`.
void AddBleuStatistics(const std::string& hypothesis, const std::string& reference, BleuStatistics* stats);
// BLEU on the 0-1 scale from the corpus's statistics (as CorpusBleu).
double BleuFromStatistics(const BleuStatistics& stats);

// sacrebleu's '13a' tokenizer (mteval-v13a.pl): drops "<skipped>", joins
// "-\n" hyphenations, unescapes &quot; &amp; &lt; &gt;, splits off ASCII
// punctuation and symbols, periods and commas except between digits, and a
// dash after a digit; whitespace is collapsed. Works on bytes: non-ASCII
// characters pass through unchanged (as in sacrebleu), but only ASCII
// whitespace separates tokens.
std::string Tokenize13a(const std::string& line);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_BLEU_H_
