// Corpus BLEU-4 against worked examples computed by hand from the definition
// (Papineni et al. 2002).

#include "framework/data/bleu.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(Bleu, WorkedExampleWithExtraWord) {
  // hyp: the cat sat on the mat today / ref: the cat sat on the mat
  // p1 = 6/7, p2 = 5/6, p3 = 4/5, p4 = 3/4; c = 7 > r = 6 so BP = 1;
  // BLEU = (6/7 * 5/6 * 4/5 * 3/4)^(1/4) = (3/7)^(1/4).
  EXPECT_NEAR(CorpusBleu({"the cat sat on the mat today"}, {"the cat sat on the mat"}),
              std::pow(3.0 / 7.0, 0.25), 1e-12);
}

TEST(Bleu, BrevityPenaltyForShortOutput) {
  // Every n-gram matches, but c = 5 < r = 6: BP = exp(1 - 6/5).
  EXPECT_NEAR(CorpusBleu({"the cat sat on the"}, {"the cat sat on the mat"}), std::exp(-0.2), 1e-12);
}

TEST(Bleu, ClippingAndCorpusAggregation) {
  // "the the the the" vs "the cat": unigram matches clip to 1; no 2-gram
  // matches -> 0 (unsmoothed).
  EXPECT_EQ(CorpusBleu({"the the the the"}, {"the cat"}), 0.0);
  // Statistics add over sentences before the geometric mean: the perfect
  // pair (4 words) plus the 7/6-word pair above.
  double p = (4.0 + 6) / (4 + 7) * (3.0 + 5) / (3 + 6) * (2.0 + 4) / (2 + 5) * (1.0 + 3) / (1 + 4);
  EXPECT_NEAR(CorpusBleu({"a b c d", "the cat sat on the mat today"},
                         {"a b c d", "the cat sat on the mat"}),
              std::pow(p, 0.25), 1e-12);
  EXPECT_EQ(CorpusBleu({"x y z w"}, {"x y z w"}), 1.0);
}

}  // namespace
}  // namespace tvlab
