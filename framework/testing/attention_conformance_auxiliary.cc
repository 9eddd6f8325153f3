// The auxiliary-output channel (framework/autograd/auxiliary_outputs.h) for
// every (attention layout, attention score) pair linked into the test
// binary, beside attention_conformance.cc in the same suite: every
// auxiliary loss the layout or the score declares has the gradient of its
// value, and every declared output is emitted by a training forward
// (AuxiliaryOutputFailures, plugin_test_util.h). A pair that declares
// nothing passes trivially.

#include <string>
#include <tuple>
#include <vector>

#include "framework/attention/attend.h"
#include "framework/testing/census.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using Pair = std::tuple<std::string, std::string>;  // (layout, score)

std::vector<Pair> AllPairs() {
  std::vector<Pair> pairs;
  for (const auto& layout : PluginsUnderTest("attention_layout"))
    for (const auto& score : PluginsUnderTest("attention_score")) pairs.emplace_back(layout, score);
  return pairs;
}

class AttentionAuxiliaryConformance : public ::testing::TestWithParam<Pair> {};

TEST_P(AttentionAuxiliaryConformance, AuxiliaryLossGradientsMatchFiniteDifferences) {
  const ModelDims dims = SmallDims();
  auto layout = MakeAttentionLayout(std::get<0>(GetParam()), dims);
  auto score = MakeAttentionScore(std::get<1>(GetParam()), dims);
  auto forward = [&](const std::vector<Var>& v) {
    AttentionInput in;
    in.x = v[0];
    in.mask = CausalMask(0);
    in.score = score.get();
    in.ctx = {true, 5, 9};
    layout->Forward(in);
  };
  const std::vector<Var> x = {RandomVar({1, 4, 8}, 6)};
  EXPECT_EQ(AuxiliaryOutputFailures(*layout, forward, x), "") << "layout";
  EXPECT_EQ(AuxiliaryOutputFailures(*score, forward, x), "") << "score";
}

INSTANTIATE_TEST_SUITE_P(Registered, AttentionAuxiliaryConformance, ::testing::ValuesIn(AllPairs()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace tvlab
