// The reducer's bookkeeping, against a stand-in world of two ranks whose
// other rank holds known values: gradients of every size (larger than a
// bucket, smaller, undefined) come back as the sum over the ranks, the loss
// as the token-weighted global mean; a rank that disagrees on sizes or has
// no tokens is an error. ShardBatch's rows. (tests/data_parallel_test.cc
// runs the real thing under mpirun.)

#include "framework/distributed/gradient_reducer.h"

#include <numeric>

#include "framework/distributed/communicator.h"
#include "framework/distributed/shard_batch.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// Rank 0 of two; the other rank's floats are 1000 + their position in the
// stream of all floats reduced so far, its doubles `other_doubles`.
class TwoRanks : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  absl::Status AllReduceSum(float* values, int64_t n, const char*) override {
    for (int64_t i = 0; i < n; ++i) values[i] += 1000.0f + static_cast<float>(floats_++);
    ++calls_;
    return absl::OkStatus();
  }
  absl::Status AllReduceSum(double* values, int64_t n, const char*) override {
    for (int64_t i = 0; i < n; ++i) values[i] += other_doubles[i];
    return absl::OkStatus();
  }
  absl::Status AllReduceMax(int64_t* values, int64_t n, const char*) override {
    for (int64_t i = 0; i < n; ++i) values[i] = std::max(values[i], other_max[i]);
    return absl::OkStatus();
  }
  absl::Status AllGather(const uint64_t*, int64_t, uint64_t*, const char*) override { return absl::OkStatus(); }
  void AbortAll(int) override {}

  std::vector<double> other_doubles = {0, 0, 0};
  std::vector<int64_t> other_max = {0, 0};
  int64_t floats_ = 0;
  int calls_ = 0;
};

std::vector<std::pair<std::string, Var>> Params(const std::vector<int64_t>& sizes, float* next) {
  std::vector<std::pair<std::string, Var>> params;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Var p(Tensor::FromVector({sizes[i]}, std::vector<float>(sizes[i], 0.0f)), true);
    if (sizes[i] > 1) {  // size 1: left without a gradient (undefined)
      std::vector<float> g(sizes[i]);
      for (float& x : g) x = (*next)++;
      p.mutable_grad() = Tensor::FromVector({sizes[i]}, g);
    }
    params.push_back({"p" + std::to_string(i), p});
  }
  return params;
}

TEST(GradientReducer, SumsEveryGradientAcrossBucketsInParameterOrder) {
  TwoRanks world;
  float next = 0;
  auto params = Params({7, 1, 2, 5}, &next);  // 14 defined values
  world.other_max = {14, -14};
  // 12-byte buckets: 3 floats each, so p0 spans three buckets, p2 and p3 share one.
  auto reducer = MakeGradientReducer(&world, 3 * sizeof(float));
  ASSERT_TRUE(reducer->ReduceGradients(params).ok());
  EXPECT_EQ(world.calls_, 5);  // ceil(14 / 3)
  int64_t stream = 0;
  float mine = 0;
  for (const auto& [name, p] : params) {
    if (!p.grad().defined()) {
      EXPECT_EQ(name, "p1");  // stays undefined: AdamW skips it
      continue;
    }
    for (float g : p.grad().ToVector()) EXPECT_EQ(g, (mine++) + 1000.0f + (stream++)) << name;
  }
  EXPECT_EQ(stream, 14);
  EXPECT_GE(reducer->reduce_seconds(), 0.0);
}

TEST(GradientReducer, RefusesRanksWithDifferentGradientSizes) {
  TwoRanks world;
  float next = 0;
  auto params = Params({4, 3}, &next);  // 7 values here
  world.other_max = {9, -7};            // another rank has 9
  auto reducer = MakeGradientReducer(&world);
  absl::Status status = reducer->ReduceGradients(params);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("do not train the same model"), std::string::npos) << status;
  EXPECT_EQ(world.calls_, 0);
}

TEST(GradientReducer, LossIsTheTokenWeightedGlobalMean) {
  TwoRanks world;
  // This rank: 30 tokens at mean 2.0; the other: 10 tokens at mean 4.0.
  world.other_doubles = {10 * 4.0, 10, 0};
  auto reducer = MakeGradientReducer(&world);
  absl::StatusOr<CombinedLoss> combined = reducer->CombineLoss(2.0, 30);
  ASSERT_TRUE(combined.ok()) << combined.status();
  EXPECT_DOUBLE_EQ(combined->loss, (30 * 2.0 + 10 * 4.0) / 40);
  EXPECT_DOUBLE_EQ(combined->weight, 30.0 / 40);

  world.other_doubles = {0, 0, 1};  // the other rank has no target tokens
  absl::Status status = reducer->CombineLoss(2.0, 30).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(IsOnEveryRank(status));
}

TEST(GradientReducer, OneProcessIsTheIdentity) {
  SingleProcess world;
  float next = 0;
  auto params = Params({3}, &next);
  auto reducer = MakeGradientReducer(&world);
  ASSERT_TRUE(reducer->ReduceGradients(params).ok());
  EXPECT_EQ(params[0].second.grad().ToVector(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(reducer->CombineLoss(1.5, 7)->loss, 1.5);
  EXPECT_EQ(reducer->CombineLoss(1.5, 7)->weight, 1.0);
}

TEST(ShardBatch, ContiguousRowsOfEveryPerRowField) {
  Batch global;
  global.batch = 4;
  global.length = 2;
  global.inputs = {0, 1, 10, 11, 20, 21, 30, 31};
  global.targets = {5, 5, 6, kIgnoreTarget, 7, 7, kIgnoreTarget, kIgnoreTarget};
  global.lengths = {2, 1, 2, 0};
  Batch shard = ShardBatch(global, 1, 2);
  EXPECT_EQ(shard.batch, 2);
  EXPECT_EQ(shard.length, 2);
  EXPECT_EQ(shard.inputs, (std::vector<int32_t>{20, 21, 30, 31}));
  EXPECT_EQ(shard.lengths, (std::vector<int64_t>{2, 0}));
  EXPECT_TRUE(shard.source.empty());
  EXPECT_EQ(TargetTokens(shard), 2);
  EXPECT_EQ(TargetTokens(ShardBatch(global, 0, 2)), 3);
  EXPECT_EQ(ShardBatch(global, 0, 1).inputs, global.inputs);
}

}  // namespace
}  // namespace tvlab
