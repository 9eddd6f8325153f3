// The content-hash split and the overlap measurement the run reports.

#include <map>

#include "framework/data/eval_train_overlap.h"
#include "framework/data/heldout_split.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(HeldOutSplit, HashIsFixedAndSeparatesContent) {
  // A fixed function of the tokens: the same value on every machine and run.
  EXPECT_EQ(ContentHash({1, 2, 3}), ContentHash({1, 2, 3}));
  EXPECT_NE(ContentHash({1, 2, 3}), ContentHash({3, 2, 1}));
  EXPECT_NE(ContentHash({}), ContentHash({0}));  // the length counts
  EXPECT_NE(ContentHash({0}), ContentHash({0, 0}));
}

TEST(HeldOutSplit, AboutOneInEightInputsIsHeldOut) {
  // All 10^4 strings of 4 digits: the held-out share is near 1/8.
  int held = 0;
  for (int v = 0; v < 10000; ++v) {
    std::vector<int32_t> digits = {v / 1000, v / 100 % 10, v / 10 % 10, v % 10};
    held += IsHeldOut(digits);
  }
  EXPECT_NEAR(held / 10000.0, 1.0 / kHeldOutShare, 0.01) << held;
}

TEST(HeldOutSplit, TooSmallSpacesAreRefusedNamingTheField) {
  EXPECT_TRUE(CheckSplittable(100, "x", "task.options").ok());
  absl::Status s = CheckSplittable(10, "strings of 1 to 1 of 10 digits", "task.options");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("task.options: the task has only 10 distinct inputs "
                                          "(strings of 1 to 1 of 10 digits)"),
            std::string::npos)
      << s;
}

// A tagging task over the digits 0..9 (rows of length 1) whose training and
// evaluation streams are chosen by the test.
class OneTokenTask : public TaggingTask {
 public:
  explicit OneTokenTask(bool leaky) : leaky_(leaky) {}
  int64_t vocab_size() const override { return 10; }
  int64_t max_length() const override { return 1; }
  Batch TrainBatch(uint64_t, int64_t step, int64_t batch_size) const override {
    Batch b;
    b.batch = batch_size;
    b.length = 1;
    for (int64_t r = 0; r < batch_size; ++r) b.inputs.push_back((step * batch_size + r) % 5);  // 0..4
    b.targets = b.inputs;
    return b;
  }
  Batch EvalBatch(uint64_t, int64_t first, int64_t count) const override {
    Batch b;
    b.batch = count;
    b.length = 1;
    // Leaky: 0, 5, 1, 6, ... (half of them training inputs); else 5..9.
    for (int64_t i = first; i < first + count; ++i)
      b.inputs.push_back(leaky_ ? (i % 2 ? 5 + i / 2 % 5 : i / 2 % 5) : 5 + i % 5);
    b.targets = b.inputs;
    return b;
  }

 private:
  bool leaky_;
};

TEST(EvalTrainOverlap, CountsEvaluationExamplesMetInTraining) {
  const EvalTrainOverlap leaky = MeasureEvalTrainOverlap(OneTokenTask(true), 0, 3, 4, 42, 10);
  EXPECT_EQ(leaky.eval_examples, 10);
  EXPECT_EQ(leaky.train_examples, 12);
  EXPECT_EQ(leaky.overlapping, 5);
  EXPECT_DOUBLE_EQ(leaky.fraction(), 0.5);
  const EvalTrainOverlap clean = MeasureEvalTrainOverlap(OneTokenTask(false), 0, 3, 4, 42, 10);
  EXPECT_EQ(clean.overlapping, 0);
  EXPECT_DOUBLE_EQ(clean.fraction(), 0.0);
}

TEST(EvalTrainOverlap, RowContentsCoverLengthsAndSource) {
  Batch b;
  b.batch = 2;
  b.length = 3;
  b.inputs = {1, 7, 0, 1, 7, 9};  // (B, T); row 0 has 2 real tokens
  b.lengths = {2, 3};
  b.source_length = 2;
  b.source = {4, 4, 4, 5};  // (B, S)
  b.source_lengths = {2, 2};
  std::vector<std::string> rows = RowContents(b);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0], rows[1]);
  Batch same_tokens_other_source = b;
  same_tokens_other_source.source = {4, 5, 4, 5};
  EXPECT_NE(RowContents(same_tokens_other_source)[0], rows[0]);  // the source counts
  Batch other_padding = b;
  other_padding.inputs[2] = 3;  // beyond row 0's length
  EXPECT_EQ(RowContents(other_padding)[0], rows[0]);  // padding does not
}

}  // namespace
}  // namespace tvlab
