// The NCCL gradient reducer. Without --config=cuda: refused, saying how to
// rebuild. With it but without a GPU (this project's build machines): refused,
// saying why. On a GPU, in a world of one process (a one-rank NCCL
// communicator): gradients on the device come back summed over the one rank,
// i.e. unchanged; undefined gradients are skipped; a host gradient is an
// error naming the parameter; the loss goes through the host reducer.
// tests/data_parallel_test.cc covers several ranks under mpirun (MPI).

#include "framework/distributed/nccl_reducer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/distributed/communicator.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

bool HasGpu() {
  std::vector<std::string> usable = UsableBackends();
  return std::find(usable.begin(), usable.end(), "gpu_cuda") != usable.end();
}

TEST(NcclReducer, RefusedWithoutNcclOrWithoutAGpuSayingWhy) {
  if (NcclAvailable() && HasGpu()) GTEST_SKIP() << "a GPU is here: the other tests run instead";
  SingleProcess world;
  auto made = MakeNcclGradientReducer(&world, MakeGradientReducer(&world));
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(made.status().message());
  if (NcclAvailable()) {
    EXPECT_NE(message.find("needs a CUDA device"), std::string::npos) << message;
  } else {
    EXPECT_NE(message.find("--config=cuda"), std::string::npos) << message;
  }
}

class NcclOneRank : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NcclAvailable()) GTEST_SKIP() << "built without --config=cuda (no NCCL)";
    if (!HasGpu()) GTEST_SKIP() << "no usable GPU here";
  }
  SingleProcess world_;
};

TEST_F(NcclOneRank, SumsDeviceGradientsInPlaceAndSkipsUndefinedOnes) {
  ScopedBackend gpu("gpu_cuda");
  auto made = MakeNcclGradientReducer(&world_, MakeGradientReducer(&world_));
  ASSERT_TRUE(made.ok()) << made.status();
  std::unique_ptr<GradientReducer> reducer = std::move(*made);
  std::vector<std::pair<std::string, Var>> params;
  const std::vector<float> a = {1.5f, -2.0f, 3.25f}, b(1000, 0.125f);
  params.emplace_back("a", Var(Tensor::FromVector({3}, a, Device::kCuda), true));
  params.emplace_back("b", Var(Tensor::FromVector({1000}, b, Device::kCuda), true));
  params.emplace_back("unused", Var(Tensor::Zeros({4}, Device::kCuda), true));
  params[0].second.mutable_grad() = Tensor::FromVector({3}, a, Device::kCuda);
  params[1].second.mutable_grad() = Tensor::FromVector({1000}, b, Device::kCuda);
  for (int step = 0; step < 2; ++step) {  // the second call reuses the communicator
    ASSERT_TRUE(reducer->ReduceGradients(params).ok());
    EXPECT_EQ(params[0].second.grad().ToVector(), a);
    EXPECT_EQ(params[1].second.grad().ToVector(), b);
    EXPECT_FALSE(params[2].second.grad().defined());
  }
  auto loss = reducer->CombineLoss(2.5, 7);
  ASSERT_TRUE(loss.ok());
  EXPECT_EQ(loss->loss, 2.5);
  EXPECT_EQ(loss->weight, 1.0);
}

TEST_F(NcclOneRank, HostGradientIsAnErrorNamingTheParameter) {
  auto made = MakeNcclGradientReducer(&world_, MakeGradientReducer(&world_));
  ASSERT_TRUE(made.ok()) << made.status();
  std::vector<std::pair<std::string, Var>> params;
  params.emplace_back("embed.weight", Var(Tensor::Zeros({2}, Device::kCpu), true));
  params[0].second.mutable_grad() = Tensor::Zeros({2}, Device::kCpu);
  const absl::Status status = (*made)->ReduceGradients(params);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(status.message()).find("'embed.weight' is on"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace tvlab
