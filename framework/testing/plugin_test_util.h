#ifndef TVLAB_FRAMEWORK_TESTING_PLUGIN_TEST_UTIL_H_
#define TVLAB_FRAMEWORK_TESTING_PLUGIN_TEST_UTIL_H_

// Helpers for plugin tests and the conformance suites: seeded random inputs
// and plugin construction from the registries with default options.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/attention/attention_extras.h"
#include "framework/autograd/var.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/attention_score.h"
#include "framework/interfaces/ffn.h"
#include "framework/interfaces/norm_placement.h"
#include "framework/interfaces/normalization.h"
#include "framework/interfaces/position_encoding.h"

namespace tvlab {

// The linked position plugins that validation accepts with attention layout
// `layout` (CheckCapabilities in framework/model/model_spec.cc): all of them
// but a per-model-head bias table (t5_bias) with a layout that attends with
// fewer heads (differential).
std::vector<std::string> PositionsUsableWith(const std::string& layout);

// Whether validation accepts the attention options `o` with attention layout
// `layout` (CheckPerHeadOptions in framework/model/model_spec.cc): a learned
// sink and the output gate have one parameter per model head, so not with a
// layout that attends with fewer heads (differential).
bool AttentionOptionsUsableWith(const std::string& layout, const AttentionOptions& o);
// Whether layout `layout` declares kRecurrentMixer (capabilities.h).
bool IsRecurrentMixer(const std::string& layout);

// `got` against `want` (OutputAndGradients of two attention paths), each
// tensor to 1e-5 relative to its largest entry, floored at a tenth of the
// largest entry of all of them (and at 1e-2): a gradient far below the
// others is a sum of cancelling terms of their size, so its rounding noise
// is of their size too. The key bias's is zero in exact arithmetic (softmax
// ignores a constant shift); differential attention's lambda gradient is
// one sum over every head output that its head norm (scale-invariant)
// nearly cancels, and its key projections pass two near-uniform maps.
// (gtest EXPECTs, `where` in each message; `relative` replaces 1e-5.)
void ExpectSameOutputAndGradients(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                  const std::string& where, float relative = 1e-5f);

// Uniform in [lo, hi), a pure function of (shape, salt).
Tensor RandomTensor(const Shape& shape, uint64_t salt, float lo = -1.0f, float hi = 1.0f);
Var RandomVar(const Shape& shape, uint64_t salt, float lo = -1.0f, float hi = 1.0f);

// Small dims for conformance: C = 8, H = 2, hs = 4, F = 16, L = 2, no dropout.
ModelDims SmallDims();

// Sum(y * fixed random weights): a scalar that depends on every element.
Var Project(const Var& y, uint64_t salt = 777);

// The plugin `name` with default options; aborts if validation fails.
std::unique_ptr<AttentionScore> MakeAttentionScore(const std::string& name, const ModelDims& d);
std::unique_ptr<AttentionLayout> MakeAttentionLayout(const std::string& name, const ModelDims& d);
// A position plugin that refuses d because d is an encoder's (not causal)
// and it is for causal stacks only (xpos) is built with d.causal = true.
std::unique_ptr<PositionEncoding> MakePositionEncoding(const std::string& name,
                                                       const ModelDims& d);
std::unique_ptr<Normalization> MakeNormalization(const std::string& name, const ModelDims& d);
std::unique_ptr<NormPlacement> MakeNormPlacement(const std::string& name,
                                                 const PlacementArgs& args);
std::unique_ptr<Ffn> MakeFfn(const std::string& name, const ModelDims& d);

// Parameters of `m` as Vars (for gradient checks).
std::vector<Var> ParameterVars(const Module& m);

// The worked example of seed lesson 004 ("Ví dụ"), run through the score
// plugin `score` and the shared attention: three positions, causal mask,
// Q = [1, 0] everywhere, K = [0,1], [1,0], [0,-1], V = [2,0], [0,2], [2,2],
// head size 2. Returns the weights (3 x 3, row-major) and outputs (3 x 2).
struct SeedAttentionExample {
  std::vector<float> weights;
  std::vector<float> output;
};
SeedAttentionExample RunSeedAttentionExample(const std::string& score);

// The conformance check of the auxiliary-output channel
// (framework/autograd/auxiliary_outputs.h), for any kind of plugin: for each
// auxiliary loss `module` declares, the loss that `forward(inputs)` (a
// training forward of the plugin) emits under a collecting scope is
// gradient-checked against finite differences in `inputs` and the module's
// parameters. Returns one line per failure ("" when every declared loss
// passes); a declared output the forward never emits is a failure too.
std::string AuxiliaryOutputFailures(const Module& module,
                                    const std::function<void(const std::vector<Var>&)>& forward,
                                    const std::vector<Var>& inputs);

// Largest |a - b| over elements (shapes must match).
float MaxAbsDiff(const Tensor& a, const Tensor& b);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TESTING_PLUGIN_TEST_UTIL_H_
