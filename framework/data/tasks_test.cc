#include <algorithm>
#include <fstream>
#include <string>

#include "absl/strings/str_join.h"
#include "framework/data/eval_train_overlap.h"
#include "framework/data/heldout_split.h"
#include "framework/data/load_task.h"
#include "plugins/task/addition/addition.pb.h"
#include "plugins/task/parallel_text/parallel_text.pb.h"
#include "plugins/task/reverse/reverse.pb.h"
#include "plugins/task/sort_digits/sort_digits.pb.h"
#include "plugins/task/text_lm/text_lm.pb.h"
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
  // The tests ask the task for examples directly; the spec's own eval counts
  // only have to fit the smallest held-out split below.
  spec.mutable_eval()->set_examples(1);
  spec.mutable_eval()->set_decode_examples(1);
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
  EXPECT_NE(miss.status().message().find("registered: " + absl::StrJoin(TaskRegistry().Names(), ", ")),
            std::string::npos) << miss.status();
  EXPECT_GE(TaskRegistry().Names().size(), 2u);
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

// Held out by construction. Reverse with strings of 1..3 digits has only
// 1110 inputs, so a large training sample meets every training input: still
// no evaluation input is among them, and every evaluation source is one the
// hash holds out.
TEST(HeldOut, SmallDigitSpacesStayDisjoint) {
  ReverseOptions o;
  o.set_min_length(1);
  o.set_max_length(3);
  auto task = std::static_pointer_cast<const SequencePairTask>(
      MakeTask("reverse", o, ModelSpec::ENCODER_DECODER));
  const EvalTrainOverlap overlap = MeasureEvalTrainOverlap(*task, 0, 500, 32, 42, 300);
  EXPECT_EQ(overlap.overlapping, 0);
  for (int i = 0; i < 300; ++i) EXPECT_TRUE(IsHeldOut(task->EvalExample(42, i).source)) << i;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// A text whose held-out tail repeats a span of its training part: the
// training windows that equal an evaluation window are redrawn.
TEST(HeldOut, TextWindowsRepeatingTheHeldOutTextAreNotTrainedOn) {
  std::string text;
  uint32_t x = 7;
  for (int i = 0; i < 900; ++i) {
    x = x * 1103515245u + 12345u;
    text += static_cast<char>('a' + (x >> 16) % 26);
  }
  text += text.substr(100, 100);  // the held-out tenth copies bytes 100..199
  TextLmOptions o;
  o.set_path(WriteFile("repeating.txt", text));
  o.set_context_length(16);
  auto task = MakeTask("text_lm", o, ModelSpec::DECODER_ONLY);
  // The split falls at byte 899 (0.9f rounds down): (101 - 1) / 16 windows,
  // five of them copies of training text.
  ASSERT_EQ(task->NumEvalExamples(1000), 6);
  const EvalTrainOverlap overlap = MeasureEvalTrainOverlap(*task, 0, 2000, 32, 42, 6);
  EXPECT_EQ(overlap.overlapping, 0);
  EXPECT_EQ(overlap.train_examples, 64000);
}

// Prompts with non-ASCII bytes (UTF-8) tokenize to ids 128..255, never to
// negative ids, and round-trip.
TEST(TextLm, TokenizesEveryByteIntoTheVocabulary) {
  TextLmOptions o;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += static_cast<char>('a' + (i * 7919 % 26));
  o.set_path(WriteFile("plain.txt", text));
  o.set_context_length(16);
  auto made = MakeTask("text_lm", o, ModelSpec::DECODER_ONLY);
  auto task = std::dynamic_pointer_cast<const GenerativeTask>(made);
  ASSERT_NE(task, nullptr);
  const std::string prompt = "caf\xc3\xa9 \xff";
  const std::vector<int32_t> ids = task->Tokenize(prompt);
  EXPECT_EQ(ids, (std::vector<int32_t>{'c', 'a', 'f', 0xc3, 0xa9, ' ', 0xff}));
  for (int32_t id : ids) EXPECT_TRUE(id >= 0 && id < task->vocab_size()) << id;
  EXPECT_EQ(task->Detokenize(ids), prompt);
}

// A path that is not a regular text file is a validation error naming the
// field and the file, not bad_alloc (/dev/zero used to be read until memory
// ran out) nor a hang.
TEST(TextLm, PathThatIsNotARegularFileIsRefused) {
  for (const std::string& path : {std::string("/dev/zero"), std::string(getenv("TEST_TMPDIR"))}) {
    TextLmOptions o;
    o.set_path(path);
    Experiment spec;
    spec.mutable_model()->set_family(ModelSpec::DECODER_ONLY);
    spec.mutable_task()->set_plugin("text_lm");
    spec.mutable_task()->mutable_options()->PackFrom(o);
    auto refused = LoadTask(spec);
    ASSERT_FALSE(refused.ok()) << path;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(refused.status().message())
                  .find("task.options.path '" + path + "' is not a regular text file: it is a"),
              std::string::npos)
        << refused.status();
  }
}

// parallel_text: training lines equal to a held-out pair are dropped; a file
// with nothing else to train on is an error naming the file.
TEST(HeldOut, ParallelTextDropsTrainingLinesRepeatingHeldOutPairs) {
  std::string lines;
  for (int i = 0; i < 18; ++i) lines += "x" + std::to_string(i % 4) + "\tX" + std::to_string(i % 4) + "\n";
  lines += "a\tA\nx1\tX1\n";  // held out (the last tenth): a new pair and a repeated one
  ParallelTextOptions o;
  o.set_path(WriteFile("pairs.tsv", lines));
  auto task = std::static_pointer_cast<const SequencePairTask>(
      MakeTask("parallel_text", o, ModelSpec::ENCODER_DECODER));
  ASSERT_EQ(task->NumEvalExamples(1000), 2);
  EXPECT_EQ(MeasureEvalTrainOverlap(*task, 0, 200, 8, 42, 2).overlapping, 0);
  EXPECT_EQ(task->Detokenize(task->EvalExample(42, 1).source), "x1");

  Experiment spec;
  spec.mutable_model()->set_family(ModelSpec::ENCODER_DECODER);
  spec.mutable_task()->set_plugin("parallel_text");
  o.set_path(WriteFile("only_repeats.tsv", "a\tA\nb\tB\na\tA\nb\tB\n"));
  o.set_heldout_fraction(0.5);
  spec.mutable_task()->mutable_options()->PackFrom(o);
  auto refused = LoadTask(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string(refused.status().message()).find("only_repeats.tsv' repeats a held-out pair"),
            std::string::npos)
      << refused.status();
}

}  // namespace
}  // namespace tvlab
