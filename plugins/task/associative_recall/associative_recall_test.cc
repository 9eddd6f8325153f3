// associative_recall's own properties: the row layout (pairs, then queries
// in two-token slots), answers only at the queries and each the queried
// key's value, and validation naming the fields and the fix.

#include <map>
#include <set>

#include "framework/interfaces/task.h"
#include "gtest/gtest.h"
#include "plugins/task/associative_recall/associative_recall.pb.h"

namespace tvlab {
namespace {

std::unique_ptr<Task> Make(const AssociativeRecallOptions& o) {
  auto entry = TaskRegistry().Get("associative_recall");
  EXPECT_TRUE(entry.ok()) << entry.status();
  EXPECT_TRUE((*entry)->validate(o, TaskArgs{}).ok()) << (*entry)->validate(o, TaskArgs{});
  auto task = (*entry)->create(o, TaskArgs{});
  EXPECT_TRUE(task.ok()) << task.status();
  return std::move(*task);
}

absl::Status Check(const AssociativeRecallOptions& o) {
  return (*TaskRegistry().Get("associative_recall"))->validate(o, TaskArgs{});
}

// Checks every row of `b` against the MQAR layout of `o`.
void CheckRows(const Batch& b, const AssociativeRecallOptions& o) {
  const int n = o.num_pairs(), V = o.vocab_size(), T = o.seq_len();
  ASSERT_EQ(b.length, T);
  for (int64_t r = 0; r < b.batch; ++r) {
    const int32_t* in = &b.inputs[r * T];
    const int32_t* target = &b.targets[r * T];
    std::map<int32_t, int32_t> value_of;
    std::set<int32_t> values;
    for (int i = 0; i < n; ++i) {
      EXPECT_GE(in[2 * i], 1);
      EXPECT_LT(in[2 * i], V / 2) << "keys come from [1, V/2)";
      EXPECT_GE(in[2 * i + 1], V / 2) << "values come from [V/2, V)";
      EXPECT_TRUE(value_of.emplace(in[2 * i], in[2 * i + 1]).second) << "keys are distinct";
      EXPECT_TRUE(values.insert(in[2 * i + 1]).second) << "values are distinct";
      EXPECT_EQ(target[2 * i], kIgnoreTarget);
      EXPECT_EQ(target[2 * i + 1], kIgnoreTarget);
    }
    std::set<int32_t> asked;
    for (int t = 2 * n; t < T; ++t) {
      if (target[t] == kIgnoreTarget) continue;
      EXPECT_EQ((t - 2 * n) % 2, 0) << "queries start two-token slots";
      ASSERT_EQ(value_of.count(in[t]), 1u) << "a query is a key of the pairs";
      EXPECT_EQ(target[t], value_of[in[t]]) << "the answer is the queried key's value";
      EXPECT_TRUE(asked.insert(in[t]).second) << "each key is asked once";
    }
    EXPECT_EQ(static_cast<int>(asked.size()), o.num_queries());
  }
}

TEST(AssociativeRecall, RowsFollowTheMqarLayout) {
  AssociativeRecallOptions o;
  o.set_vocab_size(40);
  o.set_num_pairs(6);
  o.set_num_queries(4);
  o.set_seq_len(31);  // odd: the last token is filler
  auto task = Make(o);
  CheckRows(task->TrainBatch(3, 7, 50), o);
  CheckRows(task->EvalBatch(42, 0, 50), o);
  o.set_random_filler(false);
  Batch plain = Make(o)->TrainBatch(3, 7, 20);
  CheckRows(plain, o);
  for (size_t i = 0; i < plain.inputs.size(); ++i)
    if (i % 31 >= 12 && plain.targets[i] == kIgnoreTarget) {
      EXPECT_EQ(plain.inputs[i], 0) << "filler is 0";
    }
}

TEST(AssociativeRecall, QueriesReachEverySlot) {
  AssociativeRecallOptions o;
  o.set_num_pairs(4);
  o.set_num_queries(1);
  o.set_seq_len(16);
  Batch b = Make(o)->TrainBatch(0, 0, 400);
  std::set<int> slots;
  for (size_t i = 0; i < b.targets.size(); ++i)
    if (b.targets[i] != kIgnoreTarget) slots.insert(static_cast<int>(i % 16));
  EXPECT_EQ(slots, (std::set<int>{8, 10, 12, 14}));
}

TEST(AssociativeRecall, ValidationNamesTheFieldsAndTheFix) {
  AssociativeRecallOptions o;
  o.set_num_pairs(8);
  o.set_num_queries(8);
  o.set_seq_len(30);
  absl::Status s = Check(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("num_pairs*2 + num_queries*2 = 8*2 + 8*2 = 32 exceeds seq_len = 30"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("raise task.options.seq_len to at least 32"), std::string::npos) << s;
  o.set_seq_len(32);
  EXPECT_TRUE(Check(o).ok()) << Check(o);
  o.set_num_queries(9);
  EXPECT_NE(Check(o).message().find("task.options.num_queries must be in [1, num_pairs = 8]"), std::string::npos);
  o.set_num_queries(8);
  o.set_vocab_size(16);  // 7 keys
  EXPECT_NE(Check(o).message().find("task.options.num_pairs = 8 exceeds"), std::string::npos) << Check(o);
  o.set_vocab_size(3);
  EXPECT_NE(Check(o).message().find("task.options.vocab_size must be >= 4"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
