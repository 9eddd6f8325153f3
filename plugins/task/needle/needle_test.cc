// needle's own properties: one needle at the asked depth (random depths in
// training), the query and its only answer at the last position, and
// validation of the options with their field paths.

#include <cmath>
#include <set>

#include "framework/interfaces/task.h"
#include "gtest/gtest.h"
#include "plugins/task/needle/needle.pb.h"

namespace tvlab {
namespace {

std::unique_ptr<Task> Make(const NeedleOptions& o) {
  auto entry = TaskRegistry().Get("needle");
  EXPECT_TRUE(entry.ok()) << entry.status();
  EXPECT_TRUE((*entry)->validate(o, TaskArgs{}).ok()) << (*entry)->validate(o, TaskArgs{});
  auto task = (*entry)->create(o, TaskArgs{});
  EXPECT_TRUE(task.ok()) << task.status();
  return std::move(*task);
}

// The needle's first position in each row of `b` (V = vocab size), after
// checking the row: filler from [V/2, V) everywhere else, the key at the
// end, the value its only target.
std::vector<int> NeedlePositions(const Batch& b, int V) {
  std::vector<int> at;
  const int T = static_cast<int>(b.length);
  for (int64_t r = 0; r < b.batch; ++r) {
    const int32_t* in = &b.inputs[r * T];
    const int32_t* target = &b.targets[r * T];
    std::vector<int> keys;
    for (int t = 0; t < T - 1; ++t)
      if (in[t] < V / 4) keys.push_back(t);
    EXPECT_EQ(keys.size(), 1u) << "one needle per row";
    if (keys.size() != 1) continue;
    EXPECT_EQ(in[T - 1], in[keys[0]]) << "the query repeats the needle's key";
    EXPECT_GE(in[keys[0] + 1], V / 4);
    EXPECT_LT(in[keys[0] + 1], V / 2) << "a value follows the key";
    EXPECT_EQ(target[T - 1], in[keys[0] + 1]) << "the answer is the needle's value";
    for (int t = 0; t < T - 1; ++t) {
      EXPECT_EQ(target[t], kIgnoreTarget);
      if (t != keys[0] && t != keys[0] + 1) {
        EXPECT_GE(in[t], V / 2) << "filler";
      }
    }
    at.push_back(keys[0]);
  }
  return at;
}

TEST(Needle, EvaluationPutsTheNeedleAtTheDepth) {
  NeedleOptions o;
  o.set_context_length(43);
  for (float depth : {0.f, 0.25f, 0.5f, 1.f}) {
    o.set_depth(depth);
    const int want = static_cast<int>(std::llround(depth * 40));
    for (int at : NeedlePositions(Make(o)->EvalBatch(42, 0, 30), o.vocab_size())) EXPECT_EQ(at, want) << depth;
  }
}

TEST(Needle, TrainingDepthsAreRandomOrFixed) {
  NeedleOptions o;
  o.set_context_length(12);
  std::vector<int> at = NeedlePositions(Make(o)->TrainBatch(0, 1, 500), o.vocab_size());
  EXPECT_EQ(std::set<int>(at.begin(), at.end()).size(), 10u) << "every depth 0..T-3";
  o.set_train_random_depth(false);
  o.set_depth(0.3f);
  for (int at : NeedlePositions(Make(o)->TrainBatch(0, 1, 50), o.vocab_size())) EXPECT_EQ(at, 3);
}

TEST(Needle, ValidationNamesTheField) {
  auto entry = *TaskRegistry().Get("needle");
  NeedleOptions o;
  o.set_depth(1.5f);
  EXPECT_NE(entry->validate(o, TaskArgs{}).message().find("task.options.depth must be in [0, 1] (got 1.5)"),
            std::string::npos);
  o.set_depth(0.5f);
  o.set_context_length(3);
  EXPECT_NE(entry->validate(o, TaskArgs{}).message().find("task.options.context_length must be >= 4"),
            std::string::npos);
  o.set_context_length(64);
  o.set_vocab_size(7);
  EXPECT_NE(entry->validate(o, TaskArgs{}).message().find("task.options.vocab_size must be >= 8"),
            std::string::npos);
}

}  // namespace
}  // namespace tvlab
