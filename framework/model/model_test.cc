// Whole-model properties: the oneDNN backend matches the reference through a
// full encoder forward and backward, training is bitwise deterministic, the
// encoder is permutation-equivariant without positions, and weights are saved
// under their stable names.

#include <fstream>

#include "framework/autograd/ops.h"
#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "framework/train/run_experiment.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

Experiment TinySpec(const std::vector<std::string>& overrides = {}) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/tiny.pbtxt";
  std::ofstream(path) << "name: \"tiny\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 2 "
                         "num_heads: 4 d_ff: 32 }\ntask { plugin: \"sort_digits\" }\n"
                         "train { steps: 30 log_every: 1 }\neval { examples: 50 }\n";
  auto spec = LoadExperiment(path, overrides);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

TEST(Model, OnednnMatchesReferenceForwardAndBackward) {
  Experiment spec = TinySpec({"model.dropout=0"});
  auto model = *BuildModel(spec, 10);
  Batch batch = (*LoadTask(spec))->TrainBatch(0, 0, 4);
  std::map<std::string, std::pair<Tensor, std::vector<Tensor>>> results;
  for (const char* backend : {"reference", "cpu_onednn"}) {
    ScopedBackend scoped(backend);
    auto params = model->NamedParameters();
    for (auto& [n, v] : params) v.ZeroGrad();
    Var logits = model->Forward(batch, ForwardContext{});
    Backward(CrossEntropy(Reshape(logits, {32, 10}), batch.targets));
    std::vector<Tensor> grads;
    for (auto& [n, v] : params) grads.push_back(v.grad().Clone());
    results[backend] = {logits.value(), grads};
  }
  EXPECT_LE(MaxAbsDiff(results["reference"].first, results["cpu_onednn"].first), 1e-4f);
  for (size_t i = 0; i < results["reference"].second.size(); ++i)
    EXPECT_LE(MaxAbsDiff(results["reference"].second[i], results["cpu_onednn"].second[i]), 1e-4f) << i;
}

TEST(Model, TrainingIsBitwiseDeterministic) {
  Experiment spec = TinySpec();
  std::string a = std::string(getenv("TEST_TMPDIR")) + "/a", b = std::string(getenv("TEST_TMPDIR")) + "/b";
  std::ostringstream sink;
  ASSERT_TRUE(RunExperiment(spec, *LoadTask(spec).value(), a, sink).ok());
  ASSERT_TRUE(RunExperiment(spec, *LoadTask(spec).value(), b, sink).ok());
  auto losses = [](const std::string& dir) {
    std::ifstream in(dir + "/train_log.csv");
    std::string line, out;
    while (std::getline(in, line)) out += line.substr(0, line.find(',', line.find(',') + 1)) + "\n";
    return out;  // step,loss columns
  };
  EXPECT_EQ(losses(a), losses(b));
  EXPECT_GT(losses(a).size(), 30u * 8);
  spec.set_seed(1);
  std::string c = std::string(getenv("TEST_TMPDIR")) + "/c";
  ASSERT_TRUE(RunExperiment(spec, *LoadTask(spec).value(), c, sink).ok());
  EXPECT_NE(losses(a), losses(c));
}

TEST(Model, WithoutPositionsTheEncoderIsPermutationEquivariant) {
  Experiment spec = TinySpec({"model.position.plugin=none", "model.dropout=0"});
  auto model = *BuildModel(spec, 10);
  Batch batch;
  batch.batch = 1, batch.length = 4, batch.inputs = {3, 1, 4, 1};
  Batch permuted = batch;
  permuted.inputs = {1, 4, 1, 3};  // reversed
  Tensor y = model->Forward(batch, {}).value(), yp = model->Forward(permuted, {}).value();
  for (int t = 0; t < 4; ++t)
    for (int v = 0; v < 10; ++v) EXPECT_NEAR(y.data()[t * 10 + v], yp.data()[(3 - t) * 10 + v], 1e-5);
}

TEST(Model, SavesWeightsUnderStableNames) {
  Experiment spec = TinySpec({"train.steps=1"});
  std::string dir = std::string(getenv("TEST_TMPDIR")) + "/w";
  std::ostringstream sink;
  ASSERT_TRUE(RunExperiment(spec, *LoadTask(spec).value(), dir, sink).ok());
  std::ifstream in(dir + "/model.safetensors", std::ios::binary);
  uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);
  std::string header(header_len, ' ');
  in.read(header.data(), header_len);
  for (const char* name : {"embedding.weight", "encoder.layers.0.attention.w_q.weight",
                           "encoder.layers.1.ffn.w_2.bias", "encoder.final_norm.weight",
                           "head.weight", "encoder.layers.0.attention_residual.norm.weight"}) {
    EXPECT_NE(header.find(std::string("\"") + name + "\""), std::string::npos) << name << " in " << header;
  }
  EXPECT_NE(header.find("\"head.weight\":{\"dtype\":\"F32\",\"shape\":[10,16]"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
