#ifndef TVLAB_FRAMEWORK_DATA_BLEU_H_
#define TVLAB_FRAMEWORK_DATA_BLEU_H_

#include <string>
#include <vector>

namespace tvlab {

// Corpus BLEU-4 (Papineni et al. 2002) with one reference per hypothesis:
// clipped n-gram precisions for n = 1..4 summed over the corpus, their
// geometric mean, times the brevity penalty exp(1 - r/c) when c < r.
// Tokens are whitespace-separated words. Returns a value in [0, 1], 0 when
// some n-gram order has no match at all (unsmoothed, as NLTK's corpus_bleu);
// bleu_test.cc has worked examples.
double CorpusBleu(const std::vector<std::string>& hypotheses,
                  const std::vector<std::string>& references);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_BLEU_H_
