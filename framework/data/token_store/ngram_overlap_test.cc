#include "framework/data/token_store/ngram_overlap.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/data/token_store/token_store_writer.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<uint8_t> Ones(size_t n) { return std::vector<uint8_t>(n, 1); }

// n = 3: validation {1 2 3 4 5} has 3-grams 123 234 345; train holds 234
// (in one document) and 3 4 | 5 across a document boundary (which must not
// count), and 123 twice; test {9 9 9 9} has one distinct 3-gram.
TEST(NgramOverlap, CountsDistinctSharedNgramsInsideDocuments) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/overlap");
  auto writer = TokenStoreWriter::Create(path, 16, false);
  ASSERT_TRUE(writer.ok());
  TokenStoreWriter& w = **writer;
  ASSERT_TRUE(w.AddDocument(kTrainSplitIndex, {7, 2, 3, 4, 3, 4}, Ones(6), 6).ok());
  ASSERT_TRUE(w.AddDocument(kTrainSplitIndex, {5, 1, 2, 3, 1, 2, 3}, Ones(7), 7).ok());
  ASSERT_TRUE(w.AddDocument(kValidationSplitIndex, {1, 2, 3, 4, 5}, Ones(5), 5).ok());
  ASSERT_TRUE(w.AddDocument(kValidationSplitIndex, {1, 2}, Ones(2), 2).ok());
  ASSERT_TRUE(w.AddDocument(kTestSplitIndex, {9, 9, 9, 9}, Ones(4), 4).ok());
  ASSERT_TRUE(w.FinishSplits().ok());
  std::vector<TokenStoreSplitFiles> splits;
  for (const TokenStoreSplit& entry : w.splits()) {
    auto files = TokenStoreSplitFiles::Open(w.partial_dir(), entry, "uint16", 16);
    ASSERT_TRUE(files.ok()) << files.status();
    splits.push_back(*std::move(files));
  }
  const TokenStoreOverlap validation = MeasureNgramOverlap(splits[1], splits[0], 3);
  EXPECT_EQ(validation.of_split(), "validation");
  EXPECT_EQ(validation.in_split(), "train");
  EXPECT_EQ(validation.of_distinct(), 3);
  EXPECT_EQ(validation.shared(), 2);  // 123 and 234; not 345
  EXPECT_DOUBLE_EQ(validation.fraction(), 2.0 / 3.0);
  const TokenStoreOverlap test = MeasureNgramOverlap(splits[2], splits[0], 3);
  EXPECT_EQ(test.of_distinct(), 1);
  EXPECT_EQ(test.shared(), 0);
  EXPECT_EQ(MeasureNgramOverlap(splits[1], splits[2], 3).shared(), 0);
}

}  // namespace
}  // namespace tvlab
