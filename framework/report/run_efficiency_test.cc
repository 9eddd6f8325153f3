// A run's achieved FLOP/s and MFU (metrics.json train_flops_per_token,
// achieved_flops_per_second, efficiency) as experiments/run records them:
// the cost model's FLOPs per token, checked against a hand count; achieved
// = tokens/s x FLOPs per token; MFU = achieved / the peak, which comes from
// $TVLAB_PEAK_FLOPS or the per-machine cache (no measurement here).

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "framework/data/load_task.h"
#include "framework/perf/peak.h"
#include "framework/report/cost_model.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/run_experiment.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

Experiment TinyEncoder() {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/tiny.pbtxt";
  std::ofstream(path) << R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2
            position { plugin: "sinusoidal" } norm { placement: "pre_ln" } }
    task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 8 vocab_size: 10 } } }
    train { steps: 5 batch_size: 8 log_every: 5 } eval { examples: 16 })pb";
  auto spec = LoadExperiment(path, {});
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

RunMetrics TrainTiny(const Experiment& spec, const std::string& name, std::string* progress_text = nullptr) {
  auto task = LoadTask(spec);
  EXPECT_TRUE(task.ok()) << task.status();
  RunOptions options;
  options.train_flops_per_token = [&](const Model& model) {
    return CostOfModel(spec, **task, model).train_flops_per_token;
  };
  std::ostringstream progress;
  auto metrics = RunExperiment(spec, **task, std::string(getenv("TEST_TMPDIR")) + "/" + name, progress, options);
  EXPECT_TRUE(metrics.ok()) << metrics.status();
  if (progress_text != nullptr) *progress_text = progress.str();
  return metrics.ok() ? *metrics : RunMetrics();
}

// Hand count (as cost_model_test's): Q, K, V, O 4 x (16 x 16 + 16); the
// ReLU FFN 16 x 64 + 64 + 64 x 16 + 16; three LayerNorms of 2 x 16; the
// head 16 x 10 + 10. Forward 2 FLOPs per dense parameter and 2 x 2 x T x
// d_attn for Q K^T and A V (T = 8 keys, bidirectional); training 3x that.
double HandCountedTrainFlopsPerToken() {
  const double dense = 4 * (16 * 16 + 16) + (16 * 64 + 64 + 64 * 16 + 16) + 3 * 32 + (16 * 10 + 10);
  const double forward = 2 * dense + 4.0 * 1 * 8 * 16;
  return 3 * forward;
}

TEST(RunEfficiency, FlopsPerTokenAchievedRateAndMfuAgainstAGivenPeak) {
  setenv("TVLAB_PEAK_FLOPS", "2e9", 1);
  std::string progress;
  const RunMetrics m = TrainTiny(TinyEncoder(), "given", &progress);
  unsetenv("TVLAB_PEAK_FLOPS");
  EXPECT_DOUBLE_EQ(m.train_flops_per_token(), HandCountedTrainFlopsPerToken());
  EXPECT_DOUBLE_EQ(m.achieved_flops_per_second(), m.tokens_per_second() * m.train_flops_per_token());
  ASSERT_TRUE(m.has_efficiency());
  EXPECT_DOUBLE_EQ(m.efficiency().peak_flops_per_second(), 2e9);  // per core x 1 thread
  EXPECT_DOUBLE_EQ(m.efficiency().mfu(), m.achieved_flops_per_second() / 2e9);
  EXPECT_EQ(m.efficiency().peak_source(), "TVLAB_PEAK_FLOPS");
  EXPECT_EQ(m.efficiency().device(), CpuModel());
  EXPECT_NE(progress.find("MFU "), std::string::npos) << progress;
}

TEST(RunEfficiency, ThePeakIsReadFromTheCacheForThisCpu) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/cache";
  setenv("TVLAB_CACHE_DIR", dir.c_str(), 1);
  ASSERT_FALSE(FmaIsa().empty()) << "this test needs an x86 CPU with AVX2+FMA or AVX-512";
  // What a measurement on this machine would have written.
  ReadOrMeasureFmaPeak(dir, CpuModel(), FmaIsa(), [] { return FmaPeak{4e9, FmaIsa()}; });
  const RunMetrics m = TrainTiny(TinyEncoder(), "cached");
  unsetenv("TVLAB_CACHE_DIR");
  EXPECT_DOUBLE_EQ(m.efficiency().peak_flops_per_second(), 4e9);
  EXPECT_DOUBLE_EQ(m.efficiency().mfu(), m.achieved_flops_per_second() / 4e9);
  EXPECT_EQ(m.efficiency().peak_source(), "cached in " + dir + "/fma_peak.txt");
}

TEST(RunEfficiency, WithoutAPeakTheRateIsStillRecordedAndTheReasonSaid) {
  setenv("TVLAB_PEAK_FLOPS", "off", 1);
  const RunMetrics m = TrainTiny(TinyEncoder(), "off");
  unsetenv("TVLAB_PEAK_FLOPS");
  EXPECT_GT(m.achieved_flops_per_second(), 0);
  EXPECT_FALSE(m.efficiency().has_mfu());
  EXPECT_FALSE(m.efficiency().unknown_peak().empty());
}

}  // namespace
}  // namespace tvlab
