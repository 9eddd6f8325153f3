// AuxiliaryTally: interval and run means over the emitted values, NaN for an
// output never emitted, the weighted loss sum it returns, and the sums a
// checkpoint carries (a restored tally continues the interval exactly).

#include "framework/train/auxiliary_tally.h"

#include <cmath>

#include "framework/autograd/ops.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<AuxiliaryDeclaration> Declared() {
  return {{"ffn.balance", true, 0.5f}, {"ffn.load", false, 0.0f}, {"ffn.never", false, 0.0f}};
}

Var Scalar(float v) { return Var(Tensor::FromVector({1}, {v})); }

AuxiliaryOutputs Outputs(float balance, float load) {
  AuxiliaryOutputs outputs;
  outputs.AddLoss("ffn.balance", 0.5f, Scalar(balance));
  outputs.AddStatistic("ffn.load", Scalar(load));
  return outputs;
}

TEST(AuxiliaryTally, MeansOverTheIntervalAndTheRun) {
  AuxiliaryTally tally(Declared());
  EXPECT_DOUBLE_EQ(tally.Add(Outputs(2.0f, 0.25f)), 1.0);  // 0.5 * 2
  tally.Add(Outputs(4.0f, 0.75f));
  std::vector<AuxiliaryMean> first = tally.TakeIntervalMeans();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_DOUBLE_EQ(first[0].value, 3.0);
  EXPECT_DOUBLE_EQ(first[1].value, 0.5);
  EXPECT_TRUE(std::isnan(first[2].value));
  tally.Add(Outputs(9.0f, 1.0f));
  EXPECT_DOUBLE_EQ(tally.TakeIntervalMeans()[0].value, 9.0);
  EXPECT_DOUBLE_EQ(tally.RunMeans()[0].value, 5.0);
  EXPECT_TRUE(std::isnan(tally.TakeIntervalMeans()[0].value));  // nothing since
}

TEST(AuxiliaryTally, ACheckpointCarriesTheSums) {
  AuxiliaryTally tally(Declared()), uninterrupted(Declared());
  for (AuxiliaryTally* t : {&tally, &uninterrupted}) {
    t->Add(Outputs(1.0f, 0.1f));
    t->TakeIntervalMeans();
    t->Add(Outputs(3.0f, 0.3f));
  }
  TrainState state;
  tally.SaveTo(&state);
  AuxiliaryTally restored(Declared());
  ASSERT_TRUE(restored.RestoreFrom(state).ok());
  for (AuxiliaryTally* t : {&restored, &uninterrupted}) t->Add(Outputs(5.0f, 0.5f));
  EXPECT_DOUBLE_EQ(restored.TakeIntervalMeans()[0].value, 4.0);
  EXPECT_DOUBLE_EQ(uninterrupted.TakeIntervalMeans()[0].value, 4.0);
  EXPECT_DOUBLE_EQ(restored.RunMeans()[1].value, uninterrupted.RunMeans()[1].value);
}

TEST(AuxiliaryTally, ACheckpointOfAnotherModelIsRefused) {
  TrainState state;
  state.add_auxiliary_sums()->set_name("decoder.layers.0.ffn.z_loss");
  AuxiliaryTally tally(Declared());
  const absl::Status status = tally.RestoreFrom(state);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("decoder.layers.0.ffn.z_loss"), std::string::npos) << status;
}

TEST(AuxiliaryOutputs, AddedToJoinsCoefficientTimesLossAndItsGradient) {
  Var task(Tensor::FromVector({1}, {1.5f}), true), aux(Tensor::FromVector({1}, {2.0f}), true);
  AuxiliaryOutputs none;
  EXPECT_EQ(none.AddedTo(task).node(), task.node());  // the same Var: bit for bit
  AuxiliaryOutputs outputs;
  outputs.AddLoss("balance", 0.25f, aux);
  Var total = outputs.AddedTo(task);
  EXPECT_FLOAT_EQ(total.value().item(), 1.5f + 0.25f * 2.0f);
  Backward(total);
  EXPECT_FLOAT_EQ(aux.grad().item(), 0.25f);
  EXPECT_FLOAT_EQ(task.grad().item(), 1.0f);
}

}  // namespace
}  // namespace tvlab
