// The conformance suite every optimizer plugin gets (plugins/plugin.bzl):
// run on the plugin under test with its default options, over a small
// problem with a parameter of each role (embedding, matrix, bias, norm,
// head) and the quadratic loss 0.5 |p - target|^2, whose gradient is
// p - target (plus a deterministic wobble per step where a test wants the
// state exercised):
//   - the loss falls over 30 steps;
//   - state round trip: 3 steps, a checkpoint (SaveCheckpoint), a fresh
//     optimizer and parameters restored from it (LoadCheckpoint), 3 more
//     steps: bitwise the parameters of 6 uninterrupted steps;
//   - state tensors: unique names "<param>.<slot>", stable shapes, and
//     OptimizerStateBytes their size;
//   - groups: lr_multiplier 0 leaves a group unchanged, 0.5 moves it half as
//     far in one step as 1 does (two groups with equal values and
//     gradients); weight_decay off with zero gradients leaves a parameter
//     unchanged;
//   - a parameter without a gradient is skipped;
//   - every usable backend (reference, cpu_onednn, simulated_device, and
//     gpu_cuda where linked and usable: the emulated twin of this suite)
//     gives the reference's parameters after 5 steps within 1e-5 relative.

#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "framework/backend/backend_registry.h"
#include "framework/interfaces/optimizer.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/testing/census.h"
#include "framework/train/checkpoint.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

struct ParamSpec {
  const char* name;
  Shape shape;
};
// One parameter of each role.
const std::vector<ParamSpec>& Problem() {
  static const auto* problem = new std::vector<ParamSpec>{
      {"embedding.weight", {5, 4}},
      {"encoder.layers.0.ffn.w_1.weight", {6, 4}},
      {"encoder.layers.0.ffn.w_1.bias", {6}},
      {"encoder.layers.0.norm1.weight", {4}},
      {"head.weight", {3, 4}},
  };
  return *problem;
}

float Initial(size_t param, int64_t i) { return 0.5f * std::sin(1.7f * i + 0.9f * param + 0.3f); }
float Target(size_t param, int64_t i) { return std::cos(0.9f * i + 1.3f * param); }

std::vector<std::pair<std::string, Var>> MakeParams() {
  std::vector<std::pair<std::string, Var>> params;
  for (size_t k = 0; k < Problem().size(); ++k) {
    const ParamSpec& p = Problem()[k];
    std::vector<float> values(NumElements(p.shape));
    for (size_t i = 0; i < values.size(); ++i) values[i] = Initial(k, i);
    params.emplace_back(p.name, Var(Tensor::FromVector(p.shape, values), /*requires_grad=*/true));
  }
  return params;
}

// Sets each gradient to p - target (+ wobble * sin(...) of the step).
void SetGradients(const std::vector<std::pair<std::string, Var>>& params, int64_t step, float wobble) {
  for (size_t k = 0; k < params.size(); ++k) {
    Var var = params[k].second;
    std::vector<float> p = var.value().ToVector();
    for (size_t i = 0; i < p.size(); ++i)
      p[i] = p[i] - Target(k, i) + wobble * std::sin(0.31f * i + 0.7f * step + k);
    var.mutable_grad() = Tensor::FromVector(var.shape(), p);
  }
}

double Loss(const std::vector<std::pair<std::string, Var>>& params) {
  double loss = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    const std::vector<float> p = params[k].second.value().ToVector();
    for (size_t i = 0; i < p.size(); ++i) loss += 0.5 * (p[i] - Target(k, i)) * (p[i] - Target(k, i));
  }
  return loss;
}

class OptimizerConformance : public ::testing::TestWithParam<std::string> {
 protected:
  // The plugin with its default options over `params`; `group` edits each
  // parameter's group settings.
  std::unique_ptr<Optimizer> Make(const std::vector<std::pair<std::string, Var>>& params,
                                  const std::function<void(OptimizerParam*)>& group = nullptr) {
    auto entry = OptimizerRegistry().Get(GetParam());
    EXPECT_TRUE(entry.ok()) << entry.status();
    if (!entry.ok()) return nullptr;
    OptimizerArgs args;
    for (const auto& [name, var] : params) {
      args.params.push_back({name, var, RoleOfParameter(name, var.rank())});
      if (group) group(&args.params.back());
    }
    EXPECT_TRUE((*entry)->validate(*(*entry)->default_options, args).ok());
    return (*entry)->create(*(*entry)->default_options, args);
  }
  // `steps` steps from step `first` at the plugin's own rate.
  static void Train(Optimizer& opt, const std::vector<std::pair<std::string, Var>>& params, int64_t first,
                    int64_t steps, float wobble = 0.2f) {
    for (int64_t s = first; s < first + steps; ++s) {
      SetGradients(params, s, wobble);
      opt.Step(opt.lr());
    }
  }
};

TEST_P(OptimizerConformance, AStepOnAQuadraticLowersTheLoss) {
  auto params = MakeParams();
  auto opt = Make(params);
  ASSERT_NE(opt, nullptr);
  const double before = Loss(params);
  Train(*opt, params, 0, 30, /*wobble=*/0.0f);
  EXPECT_LT(Loss(params), before) << GetParam();
  EXPECT_EQ(opt->steps_taken(), 30);
}

TEST_P(OptimizerConformance, StateRoundTripThroughACheckpointContinuesBitwise) {
  auto straight = MakeParams();
  auto opt = Make(straight);
  ASSERT_NE(opt, nullptr);
  Train(*opt, straight, 0, 6);

  const std::string run_dir = ::testing::TempDir() + "/optimizer_" + GetParam();
  std::filesystem::remove_all(run_dir);
  auto first = MakeParams();
  auto before = Make(first);
  Train(*before, first, 0, 3);
  TrainState state;
  state.set_next_step(3);
  ASSERT_TRUE(SaveCheckpoint(run_dir, state, first, *before, "").ok());
  auto resumed_params = MakeParams();
  auto resumed = Make(resumed_params);
  auto latest = LatestCheckpoint(run_dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(LoadCheckpoint(*latest, resumed_params, resumed.get()).ok());
  EXPECT_EQ(resumed->steps_taken(), 3);
  Train(*resumed, resumed_params, 3, 3);
  for (size_t k = 0; k < straight.size(); ++k)
    EXPECT_EQ(straight[k].second.value().ToVector(), resumed_params[k].second.value().ToVector())
        << GetParam() << ": " << straight[k].first << " after a resume differs";
}

TEST_P(OptimizerConformance, StateTensorsAreNamedByParameterAndStable) {
  auto params = MakeParams();
  auto opt = Make(params);
  ASSERT_NE(opt, nullptr);
  const auto before = opt->StateTensors();
  Train(*opt, params, 0, 2);
  const auto after = opt->StateTensors();
  ASSERT_EQ(before.size(), after.size());
  std::set<std::string> names;
  int64_t bytes = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(before[i].first, after[i].first);
    EXPECT_EQ(before[i].second.shape(), after[i].second.shape()) << after[i].first;
    EXPECT_TRUE(names.insert(after[i].first).second) << "state name repeats: " << after[i].first;
    bool named_by_a_parameter = false;
    for (const auto& [name, var] : params) named_by_a_parameter |= after[i].first.rfind(name + ".", 0) == 0;
    EXPECT_TRUE(named_by_a_parameter) << after[i].first << " is not \"<param>.<slot>\"";
    bytes += after[i].second.value().numel() * 4;
  }
  EXPECT_EQ(OptimizerStateBytes(*opt), bytes);
}

TEST_P(OptimizerConformance, GroupMultipliersAreHonoured) {
  // Bias and norm: vectors of 4 with equal values and gradients.
  std::vector<std::pair<std::string, Var>> pair;
  for (const char* name : {"a.bias", "a.norm.weight", "frozen.bias"})
    pair.emplace_back(name, Var(Tensor::FromVector({4}, {0.3f, -0.2f, 0.5f, 0.1f}), true));
  auto opt = Make(pair, [](OptimizerParam* p) {
    p->lr_multiplier = p->name == "a.bias" ? 0.5f : p->name == "frozen.bias" ? 0.0f : 1.0f;
  });
  ASSERT_NE(opt, nullptr);
  for (auto& [name, var] : pair) var.mutable_grad() = Tensor::FromVector({4}, {0.7f, -1.1f, 0.4f, 2.0f});
  opt->Step(opt->lr());
  const std::vector<float> half = pair[0].second.value().ToVector(), full = pair[1].second.value().ToVector();
  const std::vector<float> start = {0.3f, -0.2f, 0.5f, 0.1f};
  EXPECT_EQ(pair[2].second.value().ToVector(), start) << "lr_multiplier 0 must leave the group unchanged";
  for (int i = 0; i < 4; ++i) {
    const double moved_full = full[i] - start[i], moved_half = half[i] - start[i];
    EXPECT_NE(moved_full, 0.0) << i;
    EXPECT_NEAR(moved_half, 0.5 * moved_full, 1e-5 * std::abs(moved_full) + 1e-7) << GetParam() << " element " << i;
  }
}

TEST_P(OptimizerConformance, NoDecayAndZeroGradientLeavesAParameterUnchanged) {
  auto params = MakeParams();
  auto opt = Make(params, [](OptimizerParam* p) { p->decay = false; });
  ASSERT_NE(opt, nullptr);
  std::vector<std::vector<float>> start;
  for (auto& [name, var] : params) {
    start.push_back(var.value().ToVector());
    var.mutable_grad() = Tensor::Zeros(var.shape());
  }
  opt->Step(opt->lr());
  for (size_t k = 0; k < params.size(); ++k)
    EXPECT_EQ(params[k].second.value().ToVector(), start[k]) << GetParam() << ": " << params[k].first;
}

TEST_P(OptimizerConformance, AParameterWithoutAGradientIsSkipped) {
  auto params = MakeParams();
  auto opt = Make(params);
  ASSERT_NE(opt, nullptr);
  SetGradients(params, 0, 0.2f);
  const std::vector<float> start = params[1].second.value().ToVector();
  params[1].second.ZeroGrad();
  opt->Step(opt->lr());
  EXPECT_EQ(params[1].second.value().ToVector(), start) << GetParam();
}

TEST_P(OptimizerConformance, EveryBackendGivesTheReferencesParameters) {
  auto run_on = [&](const std::string& backend) {
    ScopedBackend scoped(backend);
    auto params = MakeParams();
    auto opt = Make(params);
    Train(*opt, params, 0, 5);
    std::vector<std::vector<float>> out;
    for (const auto& [name, var] : params) out.push_back(var.value().ToVector());
    return out;
  };
  const auto want = run_on("reference");
  for (const std::string& backend : UsableBackends()) {
    if (backend == "reference") continue;
    const auto got = run_on(backend);
    for (size_t k = 0; k < want.size(); ++k)
      for (size_t i = 0; i < want[k].size(); ++i)
        EXPECT_NEAR(got[k][i], want[k][i], 1e-5 * std::abs(want[k][i]) + 1e-6)
            << GetParam() << " on " << backend << ": " << Problem()[k].name << "[" << i << "]";
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, OptimizerConformance,
                         ::testing::ValuesIn(PluginsUnderTest("optimizer")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
