// Corpus BLEU-4 against worked examples computed by hand from the definition
// (Papineni et al. 2002) with sacrebleu's defaults (13a tokenization, 'exp'
// smoothing); tests/sacrebleu_parity_test.sh compares with sacrebleu itself.

#include "framework/data/bleu.h"

#include <cmath>
#include <string>
#include <vector>

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
  // "the the the the" vs "the cat": unigram matches clip to 1 (p1 = 1/4);
  // no 2-, 3- or 4-gram matches: 'exp' smoothing gives 1/(2*3), 1/(4*2),
  // 1/(8*1).
  EXPECT_NEAR(CorpusBleu({"the the the the"}, {"the cat"}),
              std::pow(1.0 / 4 * 1.0 / 6 * 1.0 / 8 * 1.0 / 8, 0.25), 1e-12);
  // Hypotheses shorter than 4 words have no 4-grams at all: 0.
  EXPECT_EQ(CorpusBleu({"a b c"}, {"a b c"}), 0.0);
  // No match of any order: 0, not a smoothed value.
  EXPECT_EQ(CorpusBleu({"p q r s"}, {"w x y z"}), 0.0);
  // Statistics add over sentences before the geometric mean: the perfect
  // pair (4 words) plus the 7/6-word pair above.
  double p = (4.0 + 6) / (4 + 7) * (3.0 + 5) / (3 + 6) * (2.0 + 4) / (2 + 5) * (1.0 + 3) / (1 + 4);
  EXPECT_NEAR(CorpusBleu({"a b c d", "the cat sat on the mat today"},
                         {"a b c d", "the cat sat on the mat"}),
              std::pow(p, 0.25), 1e-12);
  EXPECT_EQ(CorpusBleu({"x y z w"}, {"x y z w"}), 1.0);
}

// Data-parallel evaluation: each rank adds its share of the pairs, the
// statistics are summed, BLEU comes from the sums: the whole corpus's BLEU.
TEST(Bleu, StatisticsOfSplitCorpusSumToTheWholeCorpusBleu) {
  const std::vector<std::string> hyps = {"the cat sat on the mat today", "a dog ran", "one two three four five",
                                         "It is raining, again."};
  const std::vector<std::string> refs = {"the cat sat on the mat", "the dog ran away", "one two three four",
                                         "It is raining again."};
  const double whole = CorpusBleu(hyps, refs);
  ASSERT_GT(whole, 0);
  BleuStatistics first, second;
  for (size_t i = 0; i < 2; ++i) AddBleuStatistics(hyps[i], refs[i], &first);
  for (size_t i = 2; i < hyps.size(); ++i) AddBleuStatistics(hyps[i], refs[i], &second);
  BleuStatistics summed;
  for (int k = 0; k < BleuStatistics::kCount; ++k) summed.data()[k] = first.data()[k] + second.data()[k];
  EXPECT_EQ(BleuFromStatistics(summed), whole);
  // Each part alone scores differently: the sums, not the scores, combine.
  EXPECT_NE(BleuFromStatistics(first), whole);
}

TEST(Bleu, Tokenizes13aBeforeCounting) {
  // "cat." is "cat ." after 13a, so it matches the reference's "cat ."
  EXPECT_EQ(CorpusBleu({"the cat sat on the mat."}, {"the cat sat on the mat ."}), 1.0);
}

TEST(Tokenize13a, SplitsPunctuationLikeMteval) {
  EXPECT_EQ(Tokenize13a("Hello, world."), "Hello , world .");
  EXPECT_EQ(Tokenize13a("  pi is 3.14, not 1,000!  "), "pi is 3.14 , not 1,000 !");
  EXPECT_EQ(Tokenize13a("well-known 5-3 (x)"), "well-known 5 - 3 ( x )");
  EXPECT_EQ(Tokenize13a("don't say \"a&amp;b\" or &lt;c&gt;"), "don't say \" a & b \" or < c >");
  EXPECT_EQ(Tokenize13a("end.<skipped>"), "end .");
  EXPECT_EQ(Tokenize13a("hyphen-\nated"), "hyphenated");
  EXPECT_EQ(Tokenize13a("caf\xc3\xa9."), "caf\xc3\xa9 .");  // non-ASCII passes through
}

}  // namespace
}  // namespace tvlab
