// Parameter counts against closed formulas. The seed's Llama-style block
// (lesson 002, exercise 2.5: d_model 64, 4 heads, SwiGLU d_ff 172, two
// RMSNorms, no biases) has 2d + 4d^2 + 3 d d_ff = 49,536 parameters; and the
// `parameters` figure of every run's metrics.json is the whole model's count.

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/metrics.pb.h"
#include "framework/train/run_experiment.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string TestTmpDir() { return std::getenv("TEST_TMPDIR"); }

// A sort spec with the given model fields, loaded as the run binary would.
Experiment Spec(const std::string& model_fields, const std::vector<std::string>& overrides = {}) {
  static int n = 0;
  std::string path = TestTmpDir() + "/params" + std::to_string(n++) + ".pbtxt";
  std::ofstream(path) << "name: \"params\"\nmodel { family: ENCODER_ONLY " << model_fields
                      << " }\ntask { plugin: \"sort_digits\" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 8 vocab_size: 10 } } }\n"
                         "train { steps: 1 batch_size: 4 }\neval { examples: 8 }\n";
  auto spec = LoadExperiment(path, overrides);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

const char kLlamaBlock[] =
    "d_model: 64 num_heads: 4 num_layers: 1 d_ff: 172 bias: false "
    "position { plugin: \"rope\" } norm { plugin: \"rmsnorm\" placement: \"pre_ln\" } "
    "ffn { plugin: \"swiglu\" }";

// Parameters whose names start with `prefix`.
int64_t CountUnder(const Module& model, const std::string& prefix) {
  int64_t total = 0;
  for (const auto& [name, var] : model.NamedParameters())
    if (name.rfind(prefix, 0) == 0) total += var.value().numel();
  return total;
}

TEST(ParameterCount, SeedLlamaBlockHas49536) {
  const int64_t d = 64, d_ff = 172;
  auto model = BuildModel(Spec(kLlamaBlock), 10);
  ASSERT_TRUE(model.ok()) << model.status();
  const int64_t block = CountUnder(**model, "encoder.layers.0.");
  EXPECT_EQ(block, 2 * d + 4 * d * d + 3 * d * d_ff);
  EXPECT_EQ(block, 49536);  // the seed's printed total
  // Its parts, as the seed prints them: norms 128, attention 16384, FFN 33024.
  EXPECT_EQ(CountUnder(**model, "encoder.layers.0.attention_residual.norm.") +
                CountUnder(**model, "encoder.layers.0.ffn_residual.norm."),
            128);
  EXPECT_EQ(CountUnder(**model, "encoder.layers.0.attention."), 16384);
  EXPECT_EQ(CountUnder(**model, "encoder.layers.0.ffn."), 33024);
}

TEST(ParameterCount, SwigluWidthRuleGivesTheSeedsBlockWithoutDff) {
  // d_ff 0: int(2/3 * 4 * 64) = 170, rounded up to a multiple of 4 = 172.
  auto model = BuildModel(Spec(kLlamaBlock, {"model.d_ff=0"}), 10);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(CountUnder(**model, "encoder.layers.0."), 49536);
}

// The attention options' parameters (framework/attention/attention_extras.h)
// sit beside each layer's attention under their documented names: q_norm and
// k_norm (hs each), sink_logits (H) and the gate (C -> H, with bias); none
// when every option is off.
TEST(ParameterCount, AttentionOptionsAddTheirParametersPerLayer) {
  const int64_t d = 64, h = 4, hs = 16;
  const std::string base = kLlamaBlock;
  auto plain = BuildModel(Spec(base), 10);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(CountUnder(**plain, "encoder.layers.0.attention_options."), 0);
  auto model = BuildModel(
      Spec(base, {"model.attention.qk_norm=RMSNORM", "model.attention.sink=LEARNED",
                  "model.attention.output_gate=HEADWISE", "model.attention.logit_softcap=30"}),
      10);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string options = "encoder.layers.0.attention_options.";
  EXPECT_EQ(CountUnder(**model, options + "q_norm"), hs);
  EXPECT_EQ(CountUnder(**model, options + "k_norm"), hs);
  EXPECT_EQ(CountUnder(**model, options + "sink_logits"), h);
  EXPECT_EQ(CountUnder(**model, options + "gate.weight"), d * h);
  EXPECT_EQ(CountUnder(**model, options + "gate.bias"), 0);  // bias: false (model.bias)
  EXPECT_EQ(CountUnder(**model, "encoder.layers.0."),
            49536 + 2 * hs + h + d * h);  // the seed's block plus the options
  // Soft-cap alone has no parameters, and the off-by-one sink none either.
  auto unparameterised = BuildModel(
      Spec(base, {"model.attention.sink=OFF_BY_ONE", "model.attention.logit_softcap=30"}), 10);
  ASSERT_TRUE(unparameterised.ok()) << unparameterised.status();
  EXPECT_EQ(CountUnder(**unparameterised, "encoder.layers.0."), 49536);
}

// Runs one training step and returns metrics.json's `parameters`.
double ReportedParameters(const Experiment& spec) {
  std::string dir = TestTmpDir() + "/run_" + std::to_string(spec.model().d_model()) + "_" +
                    spec.model().norm().placement() + spec.model().position().plugin();
  std::ostringstream sink;
  auto metrics = RunExperiment(spec, *LoadTask(spec).value(), dir, sink);
  EXPECT_TRUE(metrics.ok()) << metrics.status();
  // Read back as the file says it, not from the returned proto.
  std::ifstream file(dir + "/metrics.json");
  const std::string json((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  RunMetrics written;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &written).ok()) << json;
  return written.parameters();
}

TEST(ParameterCount, MetricsJsonReportsTheWholeModel) {
  const int64_t v = 10, t = 8;
  {
    // Llama style, 2 layers: embedding V d, blocks, final RMSNorm d, head d V + V
    // (the output head keeps its bias; model.bias covers attention and FFN).
    const int64_t d = 64, f = 172, layers = 2;
    Experiment spec = Spec(kLlamaBlock, {"model.num_layers=2"});
    EXPECT_EQ(ReportedParameters(spec),
              v * d + layers * (2 * d + 4 * d * d + 3 * d * f) + d + (d * v + v));
  }
  {
    // The original recipe with biases and a learned table of T rows:
    // attention 4 (d^2 + d), ReLU FFN 2 d f + f + d, two LayerNorms 2 * 2d,
    // and a final LayerNorm 2d for Pre-LN.
    const int64_t d = 32, f = 48, layers = 3;
    const char fields[] = "d_model: 32 num_heads: 4 num_layers: 3 d_ff: 48 "
                          "position { plugin: \"learned\" }";
    const int64_t block = 4 * (d * d + d) + (2 * d * f + f + d) + 2 * 2 * d;
    EXPECT_EQ(ReportedParameters(Spec(fields)),
              v * d + t * d + layers * block + 2 * d + (d * v + v));
    // Post-LN has no final norm.
    EXPECT_EQ(ReportedParameters(Spec(fields, {"model.norm.placement=post_ln"})),
              v * d + t * d + layers * block + (d * v + v));
  }
}

}  // namespace
}  // namespace tvlab
