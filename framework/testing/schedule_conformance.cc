// The conformance suite every schedule plugin gets (plugins/plugin.bzl), run
// with its default options over runs of 1, 10, 100 and 1000 steps at
// lr = 3e-3: every rate is finite, >= 0 and at most lr; the rates never
// rise again after their peak (warmup, then hold or decay); a schedule is a
// pure function of (lr, step, steps): two instances, and one asked out of
// order, agree bit for bit; rates scale with lr.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "framework/interfaces/schedule.h"
#include "framework/testing/census.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

class ScheduleConformance : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Schedule> Make() {
    auto entry = ScheduleRegistry().Get(GetParam());
    EXPECT_TRUE(entry.ok()) << entry.status();
    if (!entry.ok()) return nullptr;
    EXPECT_TRUE((*entry)->validate(*(*entry)->default_options, ScheduleArgs{}).ok());
    return (*entry)->create(*(*entry)->default_options, ScheduleArgs{});
  }
};

constexpr float kLr = 3e-3f;

TEST_P(ScheduleConformance, RatesAreFiniteNonNegativeAndAtMostLr) {
  auto schedule = Make();
  ASSERT_NE(schedule, nullptr);
  for (int64_t total : {1, 10, 100, 1000})
    for (int64_t step = 0; step < total; ++step) {
      const float rate = schedule->Rate(kLr, step, total);
      ASSERT_TRUE(std::isfinite(rate) && rate >= 0.0f && rate <= kLr * (1 + 1e-6f))
          << GetParam() << " step " << step << " of " << total << ": " << rate;
    }
}

TEST_P(ScheduleConformance, RatesNeverRiseAfterThePeak) {
  auto schedule = Make();
  ASSERT_NE(schedule, nullptr);
  for (int64_t total : {10, 100, 1000}) {
    std::vector<float> rates;
    for (int64_t step = 0; step < total; ++step) rates.push_back(schedule->Rate(kLr, step, total));
    size_t peak = 0;
    for (size_t i = 0; i < rates.size(); ++i)
      if (rates[i] > rates[peak]) peak = i;
    for (size_t i = peak + 1; i < rates.size(); ++i)
      ASSERT_LE(rates[i], rates[i - 1]) << GetParam() << " rises again at step " << i << " of " << total;
  }
}

TEST_P(ScheduleConformance, IsAPureFunctionOfTheStep) {
  auto a = Make(), b = Make();
  ASSERT_NE(a, nullptr);
  for (int64_t step = 999; step >= 0; step -= 7) EXPECT_EQ(a->Rate(kLr, step, 1000), b->Rate(kLr, step, 1000));
  const float before = a->Rate(kLr, 500, 1000);
  a->Rate(kLr, 3, 1000);
  EXPECT_EQ(a->Rate(kLr, 500, 1000), before);
}

TEST_P(ScheduleConformance, RatesScaleWithLr) {
  auto schedule = Make();
  ASSERT_NE(schedule, nullptr);
  for (int64_t step = 0; step < 1000; step += 37)
    EXPECT_NEAR(schedule->Rate(2 * kLr, step, 1000), 2 * schedule->Rate(kLr, step, 1000),
                1e-6 * kLr) << GetParam() << " step " << step;
}

INSTANTIATE_TEST_SUITE_P(Schedules, ScheduleConformance, ::testing::ValuesIn(PluginsUnderTest("schedule")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
