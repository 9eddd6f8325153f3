#include <algorithm>
#include <string>

#include "framework/data/load_task.h"
#include "plugins/task/addition/addition.pb.h"
#include "plugins/task/reverse/reverse.pb.h"
#include "plugins/task/sort_digits/sort_digits.pb.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// The task a spec with `plugin` and `options` names, as the run builds it.
template <typename Options>
std::shared_ptr<const Task> MakeTask(const std::string& plugin, const Options& options,
                                     ModelSpec::Family family) {
  Experiment spec;
  spec.mutable_model()->set_family(family);
  spec.mutable_task()->set_plugin(plugin);
  spec.mutable_task()->mutable_options()->PackFrom(options);
  auto task = LoadTask(spec);
  EXPECT_TRUE(task.ok()) << task.status();
  return *task;
}

std::shared_ptr<const Task> SortTask() {
  SortDigitsOptions o;
  o.set_length(8);
  o.set_vocab_size(10);
  return MakeTask("sort_digits", o, ModelSpec::ENCODER_ONLY);
}

TEST(SortDigits, TargetsAreTheSortedInputs) {
  auto task = SortTask();
  Batch b = task->TrainBatch(0, 3, 64);
  ASSERT_EQ(b.inputs.size(), 64u * 8);
  int counts[10] = {0};
  for (int r = 0; r < 64; ++r) {
    std::vector<int32_t> in(b.inputs.begin() + r * 8, b.inputs.begin() + r * 8 + 8);
    std::vector<int32_t> out(b.targets.begin() + r * 8, b.targets.begin() + r * 8 + 8);
    std::sort(in.begin(), in.end());
    EXPECT_EQ(in, out);
    for (int32_t v : in) counts[v]++;
  }
  for (int c : counts) EXPECT_GT(c, 20);  // 512 digits, all 10 values occur
}

TEST(SortDigits, BatchesArePureFunctionsOfSeedAndStep) {
  auto task = SortTask();
  EXPECT_EQ(task->TrainBatch(0, 5, 4).inputs, task->TrainBatch(0, 5, 4).inputs);
  EXPECT_NE(task->TrainBatch(0, 5, 4).inputs, task->TrainBatch(0, 6, 4).inputs);
  EXPECT_NE(task->TrainBatch(0, 5, 4).inputs, task->TrainBatch(1, 5, 4).inputs);
  // Eval examples do not depend on how they are batched.
  Batch all = task->EvalBatch(42, 0, 10);
  Batch tail = task->EvalBatch(42, 6, 4);
  EXPECT_TRUE(std::equal(tail.inputs.begin(), tail.inputs.end(), all.inputs.begin() + 6 * 8));
}

TEST(TaskRegistry, UnknownTaskListsKnownOnes) {
  auto miss = TaskRegistry().Get("sorting");
  ASSERT_FALSE(miss.ok());
  EXPECT_NE(miss.status().message().find("registered: addition, classify_max, copy, parallel_text, "
                                         "reverse, sort, sort_digits, text_lm"),
            std::string::npos) << miss.status();
}

std::shared_ptr<const SequencePairTask> ReverseTask(ModelSpec::Family family) {
  ReverseOptions o;
  o.set_min_length(2);
  o.set_max_length(5);
  o.set_num_digits(10);
  return std::static_pointer_cast<const SequencePairTask>(MakeTask("reverse", o, family));
}

TEST(SequencePairs, DecoderOnlyPackingPredictsOnlyTheTarget) {
  auto task = ReverseTask(ModelSpec::DECODER_ONLY);
  EXPECT_EQ(task->kind(), TaskKind::kSequencePair);
  EXPECT_EQ(task->max_length(), 5 + 5 + 2);
  Batch b = task->TrainBatch(0, 0, 8);
  for (int64_t r = 0; r < b.batch; ++r) {
    // Row: BOS s.. SEP t.. -> targets only from SEP on, ending with EOS.
    const int32_t* in = &b.inputs[r * b.length];
    const int32_t* tg = &b.targets[r * b.length];
    EXPECT_EQ(in[0], kBos);
    int64_t sep = std::find(in, in + b.length, kSep) - in;
    int64_t n = sep - 1;  // source length
    ASSERT_GE(n, 2);
    ASSERT_LE(n, 5);
    EXPECT_EQ(b.lengths[r], 2 * n + 2);
    for (int64_t t = 0; t < sep; ++t) EXPECT_EQ(tg[t], kIgnoreTarget);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(tg[sep + i], in[n - i]);  // reversed source
    EXPECT_EQ(tg[sep + n], kEos);
    for (int64_t t = b.lengths[r]; t < b.length; ++t) {
      EXPECT_EQ(in[t], kPad);
      EXPECT_EQ(tg[t], kIgnoreTarget);
    }
  }
}

TEST(SequencePairs, EncoderDecoderPackingShiftsTheTarget) {
  auto task = ReverseTask(ModelSpec::ENCODER_DECODER);
  Batch b = task->EvalBatch(42, 0, 4);
  Example e = task->EvalExample(42, 0);
  const int64_t n = e.source.size();
  EXPECT_EQ(b.source_lengths[0], n + 1);
  for (int64_t s = 0; s < n; ++s) EXPECT_EQ(b.source[s], e.source[s]);
  EXPECT_EQ(b.source[n], kEos);
  EXPECT_EQ(b.inputs[0], kBos);
  for (int64_t t = 0; t < n; ++t) {
    EXPECT_EQ(b.targets[t], e.target[t]);
    EXPECT_EQ(b.inputs[t + 1], e.target[t]);
  }
  EXPECT_EQ(b.targets[n], kEos);
  EXPECT_EQ(task->Detokenize(e.target).size(), e.target.size());
}

TEST(Addition, TargetsAreTheSums) {
  AdditionOptions o;
  o.set_max_digits(3);
  auto task = std::static_pointer_cast<const SequencePairTask>(
      MakeTask("addition", o, ModelSpec::ENCODER_DECODER));
  for (int i = 0; i < 50; ++i) {
    Example e = task->EvalExample(42, i);
    std::string source = task->Detokenize(e.source), target = task->Detokenize(e.target);
    size_t plus = source.find('+');
    ASSERT_NE(plus, std::string::npos) << source;
    EXPECT_EQ(std::stol(source.substr(0, plus)) + std::stol(source.substr(plus + 1)), std::stol(target))
        << source << " -> " << target;
  }
}

}  // namespace
}  // namespace tvlab
