// Training probes (probes.h) against independent computations on a small
// decoder-only model whose training forward takes the fused attention
// kernel (T = S = 64):
//   - each layer's gradient norm equals the norm of its parameters'
//     gradients summed on the host;
//   - attention entropy equals the entropy of the weights an AttentionProbe
//     dumps; the output-logit statistics equal those of the logits the
//     model returns; the largest attention logit is the largest visible one;
// and end to end: a run with probes (every step, every 4th) trains bit for
// bit like one without (losses and final weights), logs step 0 (the
// initialisation), keeps train_log.csv rectangular with empty probe cells
// on unprobed rows, reports MoE router load from the auxiliary channel and
// summarises every probe in metrics.json.

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "framework/attention/attend.h"
#include "framework/attention/attention_statistics.h"
#include "framework/autograd/ops.h"
#include "framework/data/load_task.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/probes.h"
#include "framework/train/run_experiment.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string TmpDir() { return std::getenv("TEST_TMPDIR"); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A needle model (T = 64) with dropout and MoE FFNs; `probe_every` and the
// run's length as given.
Experiment Spec(int probe_every, int steps = 12) {
  const std::string path = TmpDir() + "/probes.pbtxt";
  std::ofstream(path) << R"(name: "probes"
seed: 3
model { family: DECODER_ONLY d_model: 16 num_layers: 2 num_heads: 2 d_ff: 32 dropout: 0.1
        position { plugin: "rope" }
        ffn { plugin: "moe" options { [type.googleapis.com/tvlab.MoeFfnOptions] { num_experts: 2 top_k: 1 } } } }
task { plugin: "needle" options { [type.googleapis.com/tvlab.NeedleOptions] { vocab_size: 16 context_length: 64 } } }
train { steps: )" << steps << R"( batch_size: 4 optimizer { adamw { lr: 1e-2 } } log_every: 5
        probe_every: )" << probe_every << R"( }
eval { examples: 20 seed: 42 }
runtime { backend: "reference" threads: 1 }
)";
  auto spec = LoadExperiment(path, {});
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

std::map<std::string, double> AsMap(const std::vector<ProbeValue>& values) {
  std::map<std::string, double> m;
  for (const ProbeValue& v : values) m[v.name] = v.value;
  return m;
}

struct SmallModel {
  Experiment spec = Spec(1);
  std::shared_ptr<const Task> task = *LoadTask(spec);
  std::unique_ptr<Model> model = *BuildModel(spec, task->vocab_size(), HeadOutputs(*task));
  NamedVars params = model->NamedParameters();
};

TEST(Probes, LayerGradientNormsAreTheNormsOfTheirParametersGradients) {
  SmallModel s;
  const Batch b = s.task->TrainBatch(3, 0, 4);
  const Var logits = s.model->Forward(b, ForwardContext{true, 3, 0});  // (B, T, V)
  Backward(CrossEntropy(Reshape(logits, {b.batch * b.length, logits.dim(2)}), b.targets));
  TrainingProbes probes(s.spec.train(), 3, *s.model, *s.task, s.params);
  probes.ProbeGradients();
  const std::map<std::string, double> got = AsMap(probes.TakeStep(0));
  std::map<std::string, double> sums;  // by prefix, on the host
  for (const auto& [name, var] : s.params) {
    std::string group = name.substr(0, name.find('.'));
    for (const char* layer : {"decoder.layers.0.", "decoder.layers.1."})
      if (name.rfind(layer, 0) == 0) group = std::string(layer, std::string(layer).size() - 1);
    for (float g : var.grad().ToVector()) sums[group] += static_cast<double>(g) * g;
  }
  ASSERT_EQ(got.size(), sums.size());
  for (const auto& [group, sum] : sums) {
    ASSERT_EQ(got.count("grad_norm/" + group), 1u) << group;
    EXPECT_NEAR(got.at("grad_norm/" + group), std::sqrt(sum), 1e-6 * std::sqrt(sum)) << group;
    EXPECT_GT(sum, 0) << group;
  }
}

TEST(Probes, ForwardStatisticsMatchDumpedWeightsAndLogits) {
  SmallModel s;
  TrainingProbes probes(s.spec.train(), 3, *s.model, *s.task, s.params);
  probes.ProbeForward(2);  // the first micro-batch of step 2, without dropout
  const std::map<std::string, double> got = AsMap(probes.TakeStep(2));
  const Batch b = s.task->TrainBatch(3, 2, 4);
  std::map<std::string, double> entropy;
  AttentionProbe dump = [&](const std::string& path, const Tensor& w) {  // (B, H, T, S)
    const std::vector<float> v = w.ToVector();
    const int64_t cols = w.dim(3);
    double sum = 0;
    for (float x : v)
      if (x > 0) sum -= static_cast<double>(x) * std::log(static_cast<double>(x));
    entropy[path] = sum / static_cast<double>(v.size() / cols);
  };
  const Var logits = s.model->Forward(b, ForwardContext{false, 3, 2}, &dump);  // (B, T, V)
  ASSERT_EQ(entropy.size(), 2u);
  for (const auto& [path, h] : entropy) {
    ASSERT_EQ(got.count("attention_entropy/" + path), 1u) << path;
    EXPECT_NEAR(got.at("attention_entropy/" + path), h, 1e-4) << path;
    EXPECT_EQ(got.count("attention_max_logit/" + path), 1u) << path;
  }
  const std::vector<float> l = logits.value().ToVector();
  const int64_t v = logits.dim(2), rows = static_cast<int64_t>(l.size()) / v;
  double mean = 0, sq = 0, max = -1e30, lse = 0, lse_sq = 0;
  for (float x : l) mean += x, sq += static_cast<double>(x) * x, max = std::max<double>(max, x);
  mean /= l.size();
  for (int64_t r = 0; r < rows; ++r) {
    double m = -1e30, e = 0;
    for (int64_t c = 0; c < v; ++c) m = std::max<double>(m, l[r * v + c]);
    for (int64_t c = 0; c < v; ++c) e += std::exp(l[r * v + c] - m);
    lse += (m + std::log(e)) / rows, lse_sq += std::pow(m + std::log(e), 2) / rows;
  }
  EXPECT_NEAR(got.at("logits/mean"), mean, 1e-5);
  EXPECT_NEAR(got.at("logits/std"), std::sqrt(sq / l.size() - mean * mean), 1e-4);
  EXPECT_DOUBLE_EQ(got.at("logits/max"), max);
  EXPECT_NEAR(got.at("logits/lse_mean"), lse, 1e-4);
  EXPECT_NEAR(got.at("logits/lse_sq_mean"), lse_sq, 1e-3);
  for (const char* name : {"activation_rms/decoder.input", "activation_rms/decoder.layers.1",
                           "router_load/decoder.layers.0.ffn.expert_load.0"})
    EXPECT_EQ(got.count(name), 1u) << name;
}

TEST(Probes, AttentionStatisticsOfKnownLogits) {
  const float inf = std::numeric_limits<float>::infinity();
  // (1, 1, 2, 3): query 0 sees key 0, query 1 keys 0 and 1.
  const Tensor logits = Tensor::FromVector({1, 1, 2, 3}, {1.0f, -inf, -inf, 0.5f, 2.5f, -inf});
  const double p = 1 / (1 + std::exp(2.0));  // weight of key 0 for query 1
  const Tensor weights =
      Tensor::FromVector({1, 1, 2, 3}, {1.0f, 0.0f, 0.0f, static_cast<float>(p), static_cast<float>(1 - p), 0.0f});
  AttentionStatistics stats;
  stats.Record("layer", logits, weights);
  ASSERT_EQ(stats.layers().size(), 1u);
  EXPECT_DOUBLE_EQ(stats.layers()[0].max_logit, 2.5);
  EXPECT_NEAR(stats.layers()[0].entropy, -(p * std::log(p) + (1 - p) * std::log(1 - p)) / 2, 1e-5);
}

std::vector<std::vector<std::string>> Train(int probe_every, const std::string& name) {
  const std::string dir = TmpDir() + "/" + name;
  std::ostringstream sink;
  const Experiment spec = Spec(probe_every);
  auto run = RunExperiment(spec, *LoadTask(spec).value(), dir, sink);
  EXPECT_TRUE(run.ok()) << run.status();
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(ReadFile(dir + "/train_log.csv"));
  for (std::string line; std::getline(in, line);) rows.push_back(absl::StrSplit(line, ','));
  return rows;
}

// step, loss, lr, grad_norm of each row at `steps`.
std::string Losses(const std::vector<std::vector<std::string>>& rows, std::vector<std::string> steps) {
  std::string out;
  for (const auto& r : rows)
    if (std::find(steps.begin(), steps.end(), r[0]) != steps.end()) out += r[0] + r[1] + r[2] + r[3] + "\n";
  return out;
}

TEST(Probes, ProbedRunsTrainBitForBitLikeUnprobedOnes) {
  const int64_t fused_before = FusedAttentionCalls();
  const auto off = Train(0, "off");
  EXPECT_GT(FusedAttentionCalls(), fused_before) << "training takes the fused kernel";
  const auto every = Train(1, "every"), fourth = Train(4, "fourth");
  EXPECT_EQ(ReadFile(TmpDir() + "/off/model.safetensors"), ReadFile(TmpDir() + "/every/model.safetensors"));
  EXPECT_EQ(ReadFile(TmpDir() + "/off/model.safetensors"), ReadFile(TmpDir() + "/fourth/model.safetensors"));
  const std::vector<std::string> logged = {"0", "5", "10", "11"};
  EXPECT_EQ(Losses(off, logged), Losses(every, logged));
  EXPECT_EQ(Losses(off, logged), Losses(fourth, logged));
  EXPECT_EQ(off[0].size(), 8u + 2 * 5) << "8 columns and each MoE layer's 5 auxiliary ones";
  ASSERT_GT(fourth[0].size(), off[0].size());
  EXPECT_EQ(fourth[0][off[0].size()], "grad_norm/embedding");
  // Rows: steps 0, 4, 5, 8, 10, 11: probed at 0, 4, 8 and the last.
  std::vector<std::string> steps;
  for (size_t r = 1; r < fourth.size(); ++r) {
    ASSERT_EQ(fourth[r].size(), fourth[0].size()) << "row " << r << " is as wide as the header";
    steps.push_back(fourth[r][0]);
    const bool probed = fourth[r][0] != "5" && fourth[r][0] != "10";
    for (size_t c = off[0].size(); c < fourth[r].size(); ++c)
      EXPECT_EQ(fourth[r][c].empty(), !probed) << "step " << fourth[r][0] << " " << fourth[0][c];
  }
  EXPECT_EQ(steps, (std::vector<std::string>{"0", "4", "5", "8", "10", "11"}));
  EXPECT_EQ(every.size(), 13u) << "a row per step";
  const std::string metrics = ReadFile(TmpDir() + "/fourth/metrics.json");
  for (const char* text : {"\"probes\"", "\"name\": \"grad_norm/decoder.layers.0\"", "\"first_step\": 0",
                           "\"last_step\": 11", "\"count\": 4", "\"probe_seconds\"",
                           "router_load/decoder.layers.1.ffn.expert_load.1"})
    EXPECT_NE(metrics.find(text), std::string::npos) << text;
  EXPECT_EQ(ReadFile(TmpDir() + "/off/metrics.json").find("probe_seconds"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
