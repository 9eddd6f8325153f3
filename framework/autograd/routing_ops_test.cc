// The routing ops' gradients by finite differences on every backend, with a
// routing that drops assignments (capacity 2 of 3 tokens * 2 choices over
// 2 experts), and dispatch/combine as the identity when nothing is dropped.

#include "framework/autograd/routing_ops.h"

#include <vector>

#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

Var RandomVar(const Shape& shape, uint64_t salt) {
  Tensor t = Tensor::Empty(shape);
  std::vector<float> v(t.numel());
  RngStream rng(7, RngPurpose::kInit, salt);
  for (size_t i = 0; i < v.size(); ++i) v[i] = -1.0f + 2.0f * rng.Uniform(i);
  return Var(Tensor::FromVector(shape, v), true);
}

class RoutingOpsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const BackendDescriptor& backend = **FindBackend(GetParam());
    if (!backend.DevicePresent()) GTEST_SKIP() << GetParam() << ": no usable device here";
    scoped_ = std::make_unique<ScopedBackend>(GetParam());
  }
  std::unique_ptr<ScopedBackend> scoped_;
};

TEST_P(RoutingOpsTest, TopKGradientReachesTheChosenEntries) {
  Var x = RandomVar({5, 6}, 1), w = Var(RandomVar({5, 2}, 2).value());
  auto f = [&](const std::vector<Var>& v) { return Sum(Mul(TopK(v[0], 2).values, w)); };
  GradCheckResult r = GradCheck(f, {x});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST_P(RoutingOpsTest, DispatchAndCombineGradientsWithDrops) {
  // Tokens 0, 1, 2 choose experts (0, 1), (0, 1), (0, 1): capacity 2 drops token 2.
  ExpertSlots slots = RouteToExpertSlots(DeviceInts::Upload({0, 1, 0, 1, 0, 1}), 3, 2, 2, 2);
  EXPECT_EQ(slots.slots.ToVector(), (std::vector<int32_t>{0, 2, 1, 3, -1, -1}));
  EXPECT_EQ(slots.demand.ToVector(), (std::vector<float>{3, 3}));
  Var x = RandomVar({3, 4}, 3), gates = RandomVar({3, 2}, 4), w = RandomVar({4, 4}, 5);
  Var proj = Var(RandomVar({3, 4}, 6).value());
  auto f = [&](const std::vector<Var>& v) {
    Var expert_out = Tanh(MatMul(DispatchToSlots(v[0], slots), v[2]));  // (S, C)
    return Sum(Mul(CombineFromSlots(expert_out, v[1], slots), proj));
  };
  GradCheckResult r = GradCheck(f, {x, gates, w});
  EXPECT_TRUE(r.ok) << r.message;
  // Token 2 was dropped by both experts: its output and input gradient are 0.
  std::vector<float> y =
      CombineFromSlots(DispatchToSlots(x, slots), gates, slots).value().ToVector();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(y[8 + c], 0.0f);
}

TEST_P(RoutingOpsTest, OneExpertOfCapacityNIsTheIdentity) {
  ExpertSlots slots = RouteToExpertSlots(DeviceInts::Upload({0, 0, 0}), 3, 1, 1, 3);
  Var x = RandomVar({3, 5}, 7);
  Var ones(Tensor::FromVector({3, 1}, {1, 1, 1}));
  EXPECT_EQ(CombineFromSlots(DispatchToSlots(x, slots), ones, slots).value().ToVector(),
            x.value().ToVector());
}

INSTANTIATE_TEST_SUITE_P(AllBackends, RoutingOpsTest, ::testing::ValuesIn(RegisteredBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
