// The schedule plugins against the formula of the enum schedules they
// replaced (frozen here as the oracle: every rate bitwise equal), the old
// spelling resolved into them, and wsd's phases.

#include "framework/train/schedule_spec.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "framework/spec/old_spellings.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

// framework/train/lr_schedule.cc's LearningRate before schedules were
// plugins, with the kind as its old name.
float OldLearningRate(const std::string& kind, int warmup_steps, float min_lr_ratio, float lr, int64_t step,
                      int64_t total_steps) {
  const double warmup = warmup_steps;
  const double s = static_cast<double>(step) + 1.0;
  if (kind == "INVERSE_SQRT") {
    const double w = std::max(warmup, 1.0);
    return static_cast<float>(lr * std::sqrt(w) * std::min(1.0 / std::sqrt(s), s / std::pow(w, 1.5)));
  }
  if (s <= warmup) return static_cast<float>(lr * s / warmup);
  if (kind == "CONSTANT") return lr;
  const double floor = min_lr_ratio;
  const double span = std::max(1.0, static_cast<double>(total_steps) - warmup);
  const double progress = std::min(1.0, (s - warmup) / span);
  double factor = kind == "WARMUP_COSINE" ? 0.5 * (1.0 + std::cos(M_PI * progress)) : 1.0 - progress;
  return static_cast<float>(lr * (floor + (1.0 - floor) * factor));
}

// An experiment whose train.lr_schedule is `text`, resolved from the old
// spelling.
LrSchedule Resolved(const std::string& text) {
  Experiment spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString("train { lr_schedule { " + text + " } }", &spec));
  ResolveOldScheduleSpelling(&spec);
  return spec.train().lr_schedule();
}

TEST(Schedules, TheOldKindsAreBitwiseTheirFormula) {
  for (const char* kind : {"CONSTANT", "WARMUP_COSINE", "WARMUP_LINEAR", "INVERSE_SQRT"}) {
    for (int warmup : {0, 1, 7, 40}) {
      if (std::string(kind) == "INVERSE_SQRT" && warmup == 0) continue;  // refused by validation
      for (float floor : {0.0f, 0.1f}) {
        const LrSchedule spec = Resolved(std::string("kind: ") + kind + " warmup_steps: " + std::to_string(warmup) +
                                         " min_lr_ratio: " + std::to_string(floor));
        Problems problems;
        ValidateScheduleSpec(spec, &problems);
        ASSERT_TRUE(problems.empty()) << problems.ToStatus();
        auto schedule = BuildSchedule(spec);
        ASSERT_TRUE(schedule.ok()) << schedule.status();
        for (int64_t total : {1, 60, 1001})
          for (int64_t step = 0; step < total; ++step)
            ASSERT_EQ((*schedule)->Rate(3e-3f, step, total), OldLearningRate(kind, warmup, floor, 3e-3f, step, total))
                << kind << " warmup " << warmup << " floor " << floor << " step " << step << " of " << total;
      }
    }
  }
}

TEST(Schedules, TheOldSpellingBecomesThePluginForm) {
  const LrSchedule cosine = Resolved("kind: WARMUP_COSINE warmup_steps: 5 min_lr_ratio: 0.1");
  EXPECT_EQ(cosine.plugin(), "warmup_cosine");
  EXPECT_THAT(cosine.options().DebugString(), HasSubstr("WarmupCosineOptions"));
  const auto* r = cosine.GetReflection();
  EXPECT_FALSE(r->HasField(cosine, cosine.GetDescriptor()->FindFieldByName("kind")));
  // A later --set of an old field on the plugin form merges into its options.
  Experiment spec;
  *spec.mutable_train()->mutable_lr_schedule() = cosine;
  spec.mutable_train()->mutable_lr_schedule()->GetReflection()->SetInt32(
      spec.mutable_train()->mutable_lr_schedule(), LrSchedule::descriptor()->FindFieldByName("warmup_steps"), 9);
  ResolveOldScheduleSpelling(&spec);
  EXPECT_EQ(spec.train().lr_schedule().plugin(), "warmup_cosine");
  EXPECT_THAT(spec.train().lr_schedule().options().DebugString(), HasSubstr("min_lr_ratio"));
  auto built = BuildSchedule(spec.train().lr_schedule());
  ASSERT_TRUE(built.ok());
  EXPECT_FLOAT_EQ((*built)->Rate(1.0f, 4, 100), 5.0f / 9.0f);
  // Without a kind: the constant schedule, as before.
  EXPECT_EQ(Resolved("warmup_steps: 3").plugin(), "constant");
}

TEST(Schedules, WsdWarmsUpHoldsThenDecaysOverItsFraction) {
  LrSchedule spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "plugin: \"wsd\" options { [type.googleapis.com/tvlab.WsdOptions] { warmup_steps: 10 decay_fraction: 0.2 } }",
      &spec));
  auto wsd = BuildSchedule(spec);
  ASSERT_TRUE(wsd.ok()) << wsd.status();
  EXPECT_FLOAT_EQ((*wsd)->Rate(1.0f, 4, 100), 0.5f);   // warmup: 5 / 10
  EXPECT_FLOAT_EQ((*wsd)->Rate(1.0f, 9, 100), 1.0f);   // peak
  EXPECT_FLOAT_EQ((*wsd)->Rate(1.0f, 79, 100), 1.0f);  // the last stable step (80)
  EXPECT_FLOAT_EQ((*wsd)->Rate(1.0f, 89, 100), 0.5f);  // half way down the last 20
  EXPECT_FLOAT_EQ((*wsd)->Rate(1.0f, 99, 100), 0.0f);
  // The stable phase does not depend on the length: 300 steps hold until 240.
  EXPECT_FLOAT_EQ((*wsd)->Rate(1.0f, 200, 300), 1.0f);
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "plugin: \"wsd\" options { [type.googleapis.com/tvlab.WsdOptions] { decay_steps: 4 decay_shape: SQRT "
      "min_lr_ratio: 0.1 } }",
      &spec));
  auto sqrt = BuildSchedule(spec);
  ASSERT_TRUE(sqrt.ok());
  EXPECT_NEAR((*sqrt)->Rate(1.0f, 96, 100), 0.1 + 0.9 * (1 - std::sqrt(0.25)), 1e-6);
}

TEST(Schedules, ValidationNamesTheFieldPath) {
  LrSchedule spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "plugin: \"inverse_sqrt\" options { [type.googleapis.com/tvlab.InverseSqrtOptions] { warmup_steps: 0 } }",
      &spec));
  Problems p;
  ValidateScheduleSpec(spec, &p);
  EXPECT_THAT(p.ToStatus().ToString(),
              HasSubstr("train.lr_schedule.options (inverse_sqrt): warmup_steps must be > 0 (got 0)"));
  LrSchedule unknown;
  unknown.set_plugin("cosine");
  Problems q;
  ValidateScheduleSpec(unknown, &q);
  EXPECT_THAT(q.ToStatus().ToString(), HasSubstr("train.lr_schedule.plugin: "));
}

}  // namespace
}  // namespace tvlab
