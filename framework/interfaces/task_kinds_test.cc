// The table of task kinds: one row per TaskKind, and the answers derived
// from it (families, names, head outputs).

#include <set>

#include "framework/interfaces/task.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(TaskKinds, EveryKindHasExactlyOneRow) {
  std::set<TaskKind> seen;
  for (const TaskKindRow& row : TaskKindRows()) {
    EXPECT_TRUE(seen.insert(row.kind).second) << row.name << " has two rows";
    EXPECT_FALSE(row.name.empty());
    EXPECT_FALSE(row.families.empty()) << row.name << " fits no model family";
    EXPECT_EQ(&TaskKindRowOf(row.kind), &row);
  }
  for (TaskKind kind : {TaskKind::kTagging, TaskKind::kClassification, TaskKind::kSequencePair,
                        TaskKind::kLanguageModel, TaskKind::kCausalTagging})
    EXPECT_EQ(seen.count(kind), 1u) << static_cast<int>(kind);
}

TEST(TaskKinds, FamiliesAndNamesComeFromTheRows) {
  EXPECT_TRUE(TaskFitsFamily(TaskKind::kSequencePair, ModelSpec::ENCODER_DECODER));
  EXPECT_TRUE(TaskFitsFamily(TaskKind::kSequencePair, ModelSpec::DECODER_ONLY));
  EXPECT_FALSE(TaskFitsFamily(TaskKind::kSequencePair, ModelSpec::ENCODER_ONLY));
  EXPECT_FALSE(TaskFitsFamily(TaskKind::kLanguageModel, ModelSpec::ENCODER_DECODER));
  EXPECT_TRUE(TaskFitsFamily(TaskKind::kClassification, ModelSpec::ENCODER_ONLY));
  EXPECT_EQ(FamiliesFor(TaskKind::kSequencePair), "DECODER_ONLY or ENCODER_DECODER");
  EXPECT_EQ(FamiliesFor(TaskKind::kTagging), "ENCODER_ONLY");
  EXPECT_EQ(TaskKindName(TaskKind::kLanguageModel), "language model");
  EXPECT_TRUE(TaskKindRowOf(TaskKind::kClassification).labels_sequences);
  EXPECT_FALSE(TaskKindRowOf(TaskKind::kTagging).labels_sequences);
  EXPECT_EQ(TaskKindRowOf(TaskKind::kSequencePair).evaluations, kEvaluateGeneration);
  EXPECT_EQ(TaskKindRowOf(TaskKind::kTagging).evaluations, 0u);
  EXPECT_EQ(FamiliesFor(TaskKind::kCausalTagging), "DECODER_ONLY");
  EXPECT_EQ(TaskKindRowOf(TaskKind::kCausalTagging).evaluations, 0u);
}

// A classifier's head has one output per class, every other task's one per
// token of the vocabulary.
class Classifier : public ClassificationTask {
 public:
  int64_t num_classes() const override { return 3; }
  int64_t vocab_size() const override { return 50; }
  int64_t max_length() const override { return 4; }
  Batch TrainBatch(uint64_t, int64_t, int64_t) const override { return {}; }
  Batch EvalBatch(uint64_t, int64_t, int64_t) const override { return {}; }
};
class Tagger : public TaggingTask {
 public:
  int64_t vocab_size() const override { return 50; }
  int64_t max_length() const override { return 4; }
  Batch TrainBatch(uint64_t, int64_t, int64_t) const override { return {}; }
  Batch EvalBatch(uint64_t, int64_t, int64_t) const override { return {}; }
};

TEST(TaskKinds, HeadOutputsAreClassesOrTheVocabulary) {
  EXPECT_EQ(HeadOutputs(Classifier()), 3);
  EXPECT_EQ(HeadOutputs(Tagger()), 50);
}

}  // namespace
}  // namespace tvlab
