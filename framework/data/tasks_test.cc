#include <algorithm>

#include "framework/data/task.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::unique_ptr<Task> SortTask() {
  Experiment spec;
  spec.mutable_task()->mutable_sort_digits()->set_length(8);
  spec.mutable_task()->mutable_sort_digits()->set_vocab_size(10);
  EXPECT_EQ(TaskName(spec), "sort_digits");
  return (*TaskRegistry().Get("sort_digits"))->create(spec);
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
  auto miss = TaskRegistry().Get("sort");
  ASSERT_FALSE(miss.ok());
  EXPECT_NE(miss.status().message().find("registered: sort_digits"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
