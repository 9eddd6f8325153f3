#include "framework/testing/plugin_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "framework/autograd/auxiliary_outputs.h"
#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/core/check.h"
#include "framework/core/rng.h"
#include "framework/interfaces/capabilities.h"
#include "framework/attention/attend.h"
#include "gtest/gtest.h"

namespace tvlab {

std::vector<std::string> PositionsUsableWith(const std::string& layout) {
  const uint32_t provides = (*AttentionLayoutRegistry().Get(layout))->capabilities;
  std::vector<std::string> names;
  for (const std::string& name : PositionEncodingRegistry().Names()) {
    const uint32_t needs = (*PositionEncodingRegistry().Get(name))->capabilities;
    if ((needs & kBiasPerModelHead) && (provides & kAttendsWithFewerHeads)) continue;
    // Validation refuses a position the layout does not apply (a recurrent
    // mixer applies neither rotation nor logit bias).
    if ((needs & kRotatesQueriesAndKeys) && !(provides & kAppliesRotaryPositions)) continue;
    if ((needs & kAddsLogitBias) && !(provides & kAppliesLogitBias)) continue;
    names.push_back(name);
  }
  return names;
}

void ExpectSameOutputAndGradients(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                  const std::string& where, float relative) {
  ASSERT_EQ(got.size(), want.size());
  float floor = 1e-2f;
  for (const Tensor& t : want)
    if (t.defined())
      for (float w : t.ToVector()) floor = std::max(floor, 0.1f * std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].defined(), want[i].defined()) << where << ", tensor " << i;
    if (!got[i].defined()) continue;
    float scale = floor;
    for (float w : want[i].ToVector()) scale = std::max(scale, std::fabs(w));
    EXPECT_LE(MaxAbsDiff(got[i], want[i]), relative * scale)
        << where << (i == 0 ? ", output" : ", gradient " + std::to_string(i));
  }
}

bool AttentionOptionsUsableWith(const std::string& layout, const AttentionOptions& o) {
  const uint32_t provides = (*AttentionLayoutRegistry().Get(layout))->capabilities;
  if (provides & kRecurrentMixer) return !o.any();  // mixer_spec.cc refuses every option
  if (!(provides & kAttendsWithFewerHeads)) return true;
  return o.sink != AttentionOptions::Sink::kLearned &&
         o.output_gate == AttentionOptions::OutputGate::kNone;
}

bool IsRecurrentMixer(const std::string& layout) {
  return ((*AttentionLayoutRegistry().Get(layout))->capabilities & kRecurrentMixer) != 0;
}

namespace {

// The entry of `name`, or, when that plugin is not linked into this test,
// an abort that names the Bazel target to add to the test's dependencies
// (a test's mistake, not a tvlab bug).
template <typename Entry>
const Entry& LinkedEntry(const Registry<Entry>& registry, const std::string& name) {
  auto entry = registry.Get(name);
  if (!entry.ok()) {
    std::cerr << "this test uses the " << registry.kind() << " plugin '" << name
              << "', which is not linked into it: add \"//" << registry.folder() << "/" << name
              << "\" to the test's deps (in a plugin folder: test_deps of its tvlab_plugin() in "
              << "BUILD.bazel)\n(" << entry.status().message() << ")" << std::endl;
    std::abort();
  }
  return **entry;
}

template <typename Entry, typename Args>
auto Make(const Registry<Entry>& registry, const std::string& name, const Args& args) {
  const Entry* entry = &LinkedEntry(registry, name);
  absl::Status valid = entry->validate(*entry->default_options, args);
  TVLAB_CHECK(valid.ok()) << name << ": " << valid.message();
  auto made = entry->create(*entry->default_options, args);
  InitializeParameters(*made, 1);
  return made;
}

// Placements are not Modules; their wrappers are.
template <typename Args>
auto MakePlacement(const std::string& name, const Args& args) {
  const NormPlacementEntry& entry = LinkedEntry(NormPlacementRegistry(), name);
  return entry.create(*entry.default_options, args);
}

}  // namespace

Tensor RandomTensor(const Shape& shape, uint64_t salt, float lo, float hi) {
  RngStream rng(2024, RngPurpose::kInit, salt);
  std::vector<float> values(NumElements(shape));
  for (size_t i = 0; i < values.size(); ++i) values[i] = lo + (hi - lo) * rng.Uniform(i);
  return Tensor::FromVector(shape, values);  // on the current backend's device
}

Var RandomVar(const Shape& shape, uint64_t salt, float lo, float hi) {
  return Var(RandomTensor(shape, salt, lo, hi), /*requires_grad=*/true);
}

ModelDims SmallDims() {
  ModelDims d;
  d.d_model = 8, d.num_heads = 2, d.head_dim = 4, d.d_ff = 16, d.num_layers = 2;
  d.max_seq_len = 16, d.dropout = 0.0f, d.bias = true;
  return d;
}

Var Project(const Var& y, uint64_t salt) {
  return Sum(Mul(y, Var(RandomTensor(y.shape(), salt))));
}

std::unique_ptr<AttentionScore> MakeAttentionScore(const std::string& name, const ModelDims& d) {
  return Make(AttentionScoreRegistry(), name, d);
}
std::unique_ptr<AttentionLayout> MakeAttentionLayout(const std::string& name, const ModelDims& d) {
  return Make(AttentionLayoutRegistry(), name, d);
}
std::unique_ptr<PositionEncoding> MakePositionEncoding(const std::string& name,
                                                       const ModelDims& d) {
  // A plugin for causal stacks only (xpos) refuses an encoder: built as a decoder's.
  const PositionEncodingEntry& entry = LinkedEntry(PositionEncodingRegistry(), name);
  ModelDims dims = d;
  if (!dims.causal && !entry.validate(*entry.default_options, dims).ok()) {
    dims.causal = true;
    if (!entry.validate(*entry.default_options, dims).ok()) dims = d;  // Make reports d's problem
  }
  return Make(PositionEncodingRegistry(), name, dims);
}
std::unique_ptr<Normalization> MakeNormalization(const std::string& name, const ModelDims& d) {
  return Make(NormalizationRegistry(), name, d);
}
std::unique_ptr<NormPlacement> MakeNormPlacement(const std::string& name,
                                                 const PlacementArgs& args) {
  return MakePlacement(name, args);
}
std::unique_ptr<Ffn> MakeFfn(const std::string& name, const ModelDims& d) {
  return Make(FfnRegistry(), name, d);
}

std::vector<Var> ParameterVars(const Module& m) {
  std::vector<Var> vars;
  for (auto& [name, var] : m.NamedParameters()) vars.push_back(var);
  return vars;
}

SeedAttentionExample RunSeedAttentionExample(const std::string& score_name) {
  ModelDims dims;
  dims.head_dim = 2;
  auto score = MakeAttentionScore(score_name, dims);
  Var q(Tensor::FromVector({1, 1, 3, 2}, {1, 0, 1, 0, 1, 0}));   // (B, H, T, hs)
  Var k(Tensor::FromVector({1, 1, 3, 2}, {0, 1, 1, 0, 0, -1}));  // (B, H, S, hs)
  Var v(Tensor::FromVector({1, 1, 3, 2}, {2, 0, 0, 2, 2, 2}));   // (B, H, S, hs)
  SeedAttentionExample result;
  AttentionProbe probe = [&](const std::string&, const Tensor& w) { result.weights = w.ToVector(); };
  Module owner;
  AttentionContext context;
  context.score = score.get();
  context.mask = CausalMask(0);
  context.probe = &probe;
  context.owner = &owner;
  result.output = Attend(q, k, v, context).value().ToVector();  // (B, H, T, hs)
  return result;
}

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  TVLAB_CHECK(a.shape() == b.shape()) << ShapeToString(a.shape()) << " vs " << ShapeToString(b.shape());
  const std::vector<float> x = a.ToVector(), y = b.ToVector();  // from any device
  float m = 0.0f;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

namespace {

// The loss named `name` that one collecting forward emits (undefined if none).
Var EmittedLoss(const std::function<void(const std::vector<Var>&)>& forward, const std::vector<Var>& inputs,
                const std::string& name, std::vector<std::string>* emitted) {
  AuxiliaryOutputs outputs;
  {
    AuxiliaryScope collect(&outputs);
    forward(inputs);
  }
  Var found;
  for (const AuxiliaryLoss& loss : outputs.losses()) {
    if (emitted != nullptr) emitted->push_back(loss.name);
    if (loss.name == name) found = loss.loss;
  }
  if (emitted != nullptr)
    for (const AuxiliaryStatistic& s : outputs.statistics()) emitted->push_back(s.name);
  return found;
}

}  // namespace

std::string AuxiliaryOutputFailures(const Module& module,
                                    const std::function<void(const std::vector<Var>&)>& forward,
                                    const std::vector<Var>& inputs) {
  std::string failures;
  std::vector<Var> all = inputs;
  for (Var& p : ParameterVars(module)) all.push_back(p);
  std::vector<std::string> emitted;
  EmittedLoss(forward, inputs, "", &emitted);
  for (const AuxiliaryDeclaration& d : module.DeclaredAuxiliaryOutputs()) {
    if (std::find(emitted.begin(), emitted.end(), d.name) == emitted.end()) {
      absl::StrAppend(&failures, d.name, ": declared but not emitted by a training forward\n");
      continue;
    }
    if (!d.is_loss) continue;
    GradCheckResult r = GradCheck(
        [&](const std::vector<Var>& v) {
          return EmittedLoss(forward, std::vector<Var>(v.begin(), v.begin() + inputs.size()), d.name, nullptr);
        },
        all);
    if (!r.ok) absl::StrAppend(&failures, d.name, ": gradient differs from finite differences: ", r.message, "\n");
  }
  return failures;
}

}  // namespace tvlab
