// The conformance suite every init plugin gets (plugins/plugin.bzl), on the
// model of the example config in its folder (plugins/init/<name>/
// example.pbtxt), which must load, validate and name the plugin:
//   - deterministic for a seed: two builds agree bit for bit; another seed
//     changes every randomly drawn parameter;
//   - the parameters have the statistics the plugin declares for each
//     (InitFor): zeros and ones exactly, a uniform within its bound with
//     the std bound / sqrt(3), a normal with its std (within 10% on
//     tensors of >= 1000 entries), mean near 0;
//   - BuildModel draws exactly what the plugin declares (a redraw from its
//     declarations reproduces the built model);
//   - its learning-rate multipliers, attention scale and head multiplier
//     are finite and of the right sign, and a forward pass is finite.

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "framework/model/init_spec.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/census.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

constexpr int64_t kVocab = 40;

class InitConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string path = "plugins/init/" + GetParam() + "/example.pbtxt";
    auto spec = LoadExperiment(path, {});
    ASSERT_TRUE(spec.ok()) << "every init folder has an example config that loads: " << spec.status();
    spec_ = *spec;
    ASSERT_EQ(spec_.model().init().plugin(), GetParam()) << path << " must use the plugin";
  }
  std::unique_ptr<Model> Build(uint64_t seed) {
    Experiment spec = spec_;
    spec.set_seed(seed);
    auto model = BuildModel(spec, kVocab);
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? std::move(*model) : nullptr;
  }
  Experiment spec_;
};

std::vector<float> Values(const Var& v) { return v.value().ToVector(); }

TEST_P(InitConformance, IsDeterministicForASeed) {
  auto a = Build(7), b = Build(7), c = Build(8);
  ASSERT_TRUE(a && b && c);
  auto pa = a->NamedParameters(), pb = b->NamedParameters(), pc = c->NamedParameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(Values(pa[i].second), Values(pb[i].second)) << pa[i].first;
    std::vector<float> va = Values(pa[i].second);
    bool constant = true;
    for (float x : va) constant = constant && x == va[0];
    if (!constant) {
      EXPECT_NE(va, Values(pc[i].second)) << pa[i].first << " ignores the seed";
    }
  }
}

// Checks `values` against `init`; returns what is wrong ("" = nothing).
std::string Mismatch(const std::vector<float>& values, const Init& init) {
  double sum = 0, square = 0, largest = 0;
  for (float x : values) {
    if (!std::isfinite(x)) return "a value is not finite";
    sum += x;
    square += static_cast<double>(x) * x;
    largest = std::max(largest, std::fabs(static_cast<double>(x)));
  }
  const double n = static_cast<double>(values.size()), mean = sum / n, rms = std::sqrt(square / n);
  switch (init.kind) {
    case Init::kZeros: return largest == 0 ? "" : "declared zeros";
    case Init::kOnes:
      for (float x : values)
        if (x != 1.0f) return "declared ones";
      return "";
    case Init::kUniform:
      if (largest > init.scale) return "a value beyond the uniform's bound " + std::to_string(init.scale);
      if (n >= 1000 && std::fabs(rms - init.scale / std::sqrt(3.0)) > 0.1 * init.scale / std::sqrt(3.0))
        return "rms " + std::to_string(rms) + " is not bound / sqrt(3)";
      break;
    case Init::kConstant:
      for (float x : values)
        if (x != init.scale) return "declared the constant " + std::to_string(init.scale);
      return "";
    case Init::kNormal:
      if (n >= 1000 && std::fabs(rms - init.scale) > 0.1 * init.scale)
        return "rms " + std::to_string(rms) + " is not the declared std " + std::to_string(init.scale);
      break;
  }
  if (n >= 1000 && std::fabs(mean) > 0.1 * init.scale) return "mean " + std::to_string(mean) + " is not near 0";
  return "";
}

TEST_P(InitConformance, ParametersHaveTheDeclaredStatistics) {
  auto model = Build(3);
  ASSERT_TRUE(model);
  auto init = BuildInitializer(spec_);
  ASSERT_TRUE(init.ok()) << init.status();
  std::map<std::string, Init> declared;  // what the plugin returned, per parameter
  std::map<std::string, std::vector<float>> built;
  for (const auto& [name, var] : model->NamedParameters()) built[name] = Values(var);
  InitializeParameters(*model, 3, [&](const std::string& name, const Shape& shape, const Init& d) {
    return declared[name] = (*init)->InitFor(InitParamOf(name, shape, d));
  });
  for (const auto& [name, var] : model->NamedParameters()) {
    ASSERT_TRUE(declared.count(name)) << name;
    EXPECT_EQ(Values(var), built[name]) << name << ": BuildModel drew something else than the plugin declares";
    EXPECT_EQ(Mismatch(Values(var), declared[name]), "") << name << " (" << ParamRoleName(
        RoleOfParameter(name, var.rank())) << ")";
  }
}

TEST_P(InitConformance, ParametrisationIsFiniteAndTheForward) {
  auto model = Build(5);
  ASSERT_TRUE(model);
  auto init = BuildInitializer(spec_);
  ASSERT_TRUE(init.ok()) << init.status();
  for (const auto& [name, var] : model->NamedParameters()) {
    const float m = (*init)->LrMultiplier(InitParamOf(name, var.shape(), Init()));
    EXPECT_TRUE(std::isfinite(m) && m >= 0) << name << ": lr multiplier " << m;
  }
  const float scale = (*init)->AttentionScale(spec_.model().d_model() / spec_.model().num_heads());
  EXPECT_TRUE(std::isfinite(scale) && scale >= 0) << scale;
  const float head = (*init)->HeadInputScale();
  EXPECT_TRUE(std::isfinite(head) && head > 0) << head;
  Batch batch;
  batch.batch = 2;
  batch.length = 8;
  for (int i = 0; i < 16; ++i) batch.inputs.push_back(i % kVocab);
  batch.targets = batch.inputs;
  batch.source = batch.inputs;
  batch.source_length = 8;
  const std::vector<float> logits = model->Forward(batch, ForwardContext{}).value().ToVector();
  ASSERT_FALSE(logits.empty());
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
}

INSTANTIATE_TEST_SUITE_P(Inits, InitConformance, ::testing::ValuesIn(PluginsUnderTest("init")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
