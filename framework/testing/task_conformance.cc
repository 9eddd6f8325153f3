// Conformance for every task plugin linked into the test binary (or just the
// one under test; see census.h), built from the example config in its folder
// (plugins/task/<name>/example.pbtxt) for every model family it fits:
// batches have the declared shapes and token ranges, training batches are
// pure functions of (seed, step), evaluation is deterministic and does
// not depend on how it is batched or on which instance computes it, and no
// evaluation example is also a training example.

#include <fstream>
#include <sstream>
#include <tuple>

#include "framework/data/eval_train_overlap.h"
#include "framework/data/load_task.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/testing/census.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using Case = std::tuple<std::string, ModelSpec::Family>;  // (task, family)

// The example spec of `task`, with its data paths resolved.
Experiment ExampleSpec(const std::string& task) {
  const std::string path = PluginKindById("task").folder + "/" + task + "/example.pbtxt";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "every task folder has an example config; missing " << path;
  std::stringstream text;
  text << in.rdbuf();
  Experiment spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text.str(), &spec)) << path;
  ResolveTaskPaths(&spec, path);
  return spec;
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const std::string& task : PluginsUnderTest("task")) {
    auto entry = TaskRegistry().Get(task);
    for (auto family : {ModelSpec::ENCODER_ONLY, ModelSpec::DECODER_ONLY, ModelSpec::ENCODER_DECODER})
      if (!entry.ok() || TaskFitsFamily((*entry)->kind, family)) cases.emplace_back(task, family);
  }
  return cases;
}

class TaskConformance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    spec_ = ExampleSpec(std::get<0>(GetParam()));
    spec_.mutable_model()->set_family(std::get<1>(GetParam()));
    if (std::get<1>(GetParam()) == ModelSpec::ENCODER_ONLY &&
        spec_.model().pooling() == ModelSpec::NONE &&
        (*TaskRegistry().Get(std::get<0>(GetParam())))->kind == TaskKind::kClassification)
      spec_.mutable_model()->set_pooling(ModelSpec::MEAN);
    auto task = LoadTask(spec_);
    ASSERT_TRUE(task.ok()) << task.status();
    task_ = *task;
  }
  // Checks the shape and token ranges of `b` (batch rows `rows`).
  void CheckShapes(const Batch& b, int64_t rows) const {
    const bool classify = task_->kind() == TaskKind::kClassification;
    EXPECT_EQ(b.batch, rows);
    EXPECT_GT(b.length, 0);
    EXPECT_LE(b.length, task_->max_length()) << "rows longer than max_length()";
    ASSERT_EQ(static_cast<int64_t>(b.inputs.size()), rows * b.length);
    ASSERT_EQ(static_cast<int64_t>(b.targets.size()), classify ? rows : rows * b.length);
    for (int32_t id : b.inputs) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, task_->vocab_size());
    }
    for (int32_t t : b.targets)
      if (t != kIgnoreTarget) {
        EXPECT_GE(t, 0);
        EXPECT_LT(t, HeadOutputs(*task_));
      }
    if (!b.lengths.empty()) {
      ASSERT_EQ(static_cast<int64_t>(b.lengths.size()), rows);
      for (int64_t n : b.lengths) EXPECT_TRUE(n > 0 && n <= b.length) << n;
    }
    if (spec_.model().family() == ModelSpec::ENCODER_DECODER) {
      ASSERT_EQ(static_cast<int64_t>(b.source.size()), rows * b.source_length);
      EXPECT_LE(b.source_length, task_->max_length());
      ASSERT_EQ(static_cast<int64_t>(b.source_lengths.size()), rows);
    } else {
      EXPECT_TRUE(b.source.empty());
    }
  }
  Experiment spec_;
  std::shared_ptr<const Task> task_;
};

TEST_P(TaskConformance, BatchesHaveTheDeclaredShapes) {
  CheckShapes(task_->TrainBatch(0, 3, 5), 5);
  const int64_t eval = task_->NumEvalExamples(7);
  ASSERT_GT(eval, 0) << "no held-out examples";
  CheckShapes(task_->EvalBatch(42, 0, eval), eval);
}

TEST_P(TaskConformance, TrainingBatchesArePureFunctionsOfSeedAndStep) {
  EXPECT_EQ(task_->TrainBatch(0, 5, 4).inputs, task_->TrainBatch(0, 5, 4).inputs);
  EXPECT_EQ(task_->TrainBatch(0, 5, 4).targets, task_->TrainBatch(0, 5, 4).targets);
  EXPECT_NE(task_->TrainBatch(0, 5, 4).inputs, task_->TrainBatch(0, 6, 4).inputs);
  EXPECT_NE(task_->TrainBatch(0, 5, 4).inputs, task_->TrainBatch(1, 5, 4).inputs);
}

TEST_P(TaskConformance, EvaluationIsDeterministicAndIndependentOfBatching) {
  const int64_t n = task_->NumEvalExamples(6);
  ASSERT_GE(n, 2);
  Batch all = task_->EvalBatch(42, 0, n);
  // A second instance built from the same options (no cache) agrees.
  auto entry = *TaskRegistry().Get(spec_.task().plugin());
  auto options = UnpackPluginOptions(spec_, PluginKindById("task"));
  ASSERT_TRUE(options.ok()) << options.status();
  TaskArgs args;
  args.family = spec_.model().family();
  auto fresh = entry->create(**options, args);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  Batch again = (*fresh)->EvalBatch(42, 0, n);
  EXPECT_EQ(all.inputs, again.inputs);
  EXPECT_EQ(all.targets, again.targets);
  EXPECT_EQ(all.source, again.source);
  // Each example is the same whether it is evaluated alone or in a batch.
  for (int64_t i = 0; i < n; ++i) {
    Batch one = task_->EvalBatch(42, i, 1);
    const bool classify = task_->kind() == TaskKind::kClassification;
    const int64_t real = one.lengths.empty() ? one.length : one.lengths[0];
    for (int64_t t = 0; t < real; ++t)
      EXPECT_EQ(one.inputs[t], all.inputs[i * all.length + t]) << "example " << i << " token " << t;
    if (classify) {
      EXPECT_EQ(one.targets[0], all.targets[i]);
    }
  }
}

// The held-out set shares no example with a large sample of training
// batches: 2000 batches of 32 (64,000 training rows, more than the bundled
// example configs train on) from two training seeds, against up to 1000
// evaluation examples.
TEST_P(TaskConformance, HeldOutSetSharesNoExampleWithTraining) {
  const int64_t eval = task_->NumEvalExamples(1000);
  for (uint64_t seed : {0, 1}) {
    const EvalTrainOverlap overlap = MeasureEvalTrainOverlap(*task_, seed, 2000, 32, 42, eval);
    EXPECT_EQ(overlap.eval_examples, eval);
    EXPECT_EQ(overlap.train_examples, 2000 * 32);
    EXPECT_EQ(overlap.overlapping, 0)
        << overlap.overlapping << " of " << eval << " evaluation examples also occur among "
        << overlap.train_examples << " training rows of seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Tasks, TaskConformance, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::get<0>(info.param) + "_" +
                                  ModelSpec::Family_Name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace tvlab
