// The µP coordinate check (coord_check.h) holds under model.init "mup" and
// fails under the standard parametrisation (model.init "default"): after 4
// AdamW steps at widths 64, 256 and 1024 (RMS averaged over 3 seeds), every
// recorded activation's RMS at width 1024 is within 10% of width 64's under
// µP, while under SP the blocks' outputs and the logits differ by more than
// 2x. The stack's input (the embedding rows) is the same under both: Adam
// moves each embedding entry by about lr whatever the width, so it cannot
// grow under SP either and is held to the µP criterion only.

#include <cmath>
#include <string>
#include <vector>

#include "experiments/mup_coord/coord_check.h"
#include "framework/spec/spec_loader.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

constexpr int64_t kSmall = 64, kLarge = 1024, kSteps = 4, kSeeds = 3;

std::vector<CoordPoint> CoordCheck(const std::string& init) {
  auto base = ParseSpecFile("experiments/mup_coord/coord_check_base.pbtxt");
  EXPECT_TRUE(base.ok()) << base.status();
  if (!base.ok()) return {};
  auto points = RunCoordCheck(*base, init, {kSmall, 256, kLarge}, kSteps, kSeeds);
  EXPECT_TRUE(points.ok()) << points.status();
  return points.ok() ? *points : std::vector<CoordPoint>{};
}

// RMS at the largest width over the smallest, per activation.
std::vector<std::pair<std::string, double>> Ratios(const std::vector<CoordPoint>& points, const std::string& init) {
  std::vector<std::pair<std::string, double>> ratios;
  for (const CoordPoint& p : points)
    if (p.width == kSmall) ratios.emplace_back(p.activation, RmsAt(points, init, kLarge, p.activation) / p.rms);
  return ratios;
}

TEST(CoordCheck, FlatUnderMupAndGrowingUnderTheStandardParametrisation) {
  const auto mup = Ratios(CoordCheck("mup"), "mup"), sp = Ratios(CoordCheck("default"), "default");
  ASSERT_EQ(mup.size(), 4u);  // decoder.input, decoder.layers.0, decoder.layers.1, logits
  ASSERT_EQ(sp.size(), mup.size());
  for (const auto& [activation, ratio] : mup)
    EXPECT_LT(std::fabs(ratio - 1.0), 0.1) << "mup: " << activation << " RMS(1024) / RMS(64) = " << ratio;
  for (const auto& [activation, ratio] : sp) {
    if (activation == "decoder.input") continue;
    EXPECT_GT(ratio, 2.0) << "default: " << activation << " RMS(1024) / RMS(64) = " << ratio;
  }
}

}  // namespace
}  // namespace tvlab
