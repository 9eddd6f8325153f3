#include "framework/train/lr_schedule.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

LrSchedule Make(LrSchedule::Kind kind, int warmup, float floor = 0.0f) {
  LrSchedule s;
  s.set_kind(kind);
  s.set_warmup_steps(warmup);
  s.set_min_lr_ratio(floor);
  return s;
}

TEST(LrSchedule, ConstantWithAndWithoutWarmup) {
  EXPECT_FLOAT_EQ(LearningRate(Make(LrSchedule::CONSTANT, 0), 1e-3f, 0, 100), 1e-3f);
  EXPECT_FLOAT_EQ(LearningRate(Make(LrSchedule::CONSTANT, 10), 1e-3f, 4, 100), 5e-4f);
  EXPECT_FLOAT_EQ(LearningRate(Make(LrSchedule::CONSTANT, 10), 1e-3f, 9, 100), 1e-3f);
  EXPECT_FLOAT_EQ(LearningRate(Make(LrSchedule::CONSTANT, 10), 1e-3f, 50, 100), 1e-3f);
}

TEST(LrSchedule, CosineDecaysFromPeakToFloor) {
  LrSchedule s = Make(LrSchedule::WARMUP_COSINE, 10, 0.1f);
  EXPECT_FLOAT_EQ(LearningRate(s, 1.0f, 9, 110), 1.0f);             // end of warmup
  EXPECT_NEAR(LearningRate(s, 1.0f, 59, 110), 0.1f + 0.9f * 0.5f, 1e-6);  // half way
  EXPECT_NEAR(LearningRate(s, 1.0f, 109, 110), 0.1f, 1e-6);         // last step
}

TEST(LrSchedule, LinearDecay) {
  LrSchedule s = Make(LrSchedule::WARMUP_LINEAR, 0);
  EXPECT_NEAR(LearningRate(s, 2.0f, 49, 100), 1.0f, 1e-6);
  EXPECT_NEAR(LearningRate(s, 2.0f, 99, 100), 0.0f, 1e-6);
}

TEST(LrSchedule, InverseSqrtPeaksAtWarmupThenDecaysAsOneOverSqrtStep) {
  LrSchedule s = Make(LrSchedule::INVERSE_SQRT, 100);
  EXPECT_NEAR(LearningRate(s, 1.0f, 99, 1000), 1.0f, 1e-6);
  EXPECT_NEAR(LearningRate(s, 1.0f, 49, 1000), 0.5f, 1e-6);
  EXPECT_NEAR(LearningRate(s, 1.0f, 399, 1000), 0.5f, 1e-6);  // sqrt(100/400)
}

}  // namespace
}  // namespace tvlab
