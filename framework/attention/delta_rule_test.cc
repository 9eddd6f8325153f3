// The delta rule's three forms against each other, without a gate
// (DeltaNet) and with one per head (Gated DeltaNet), from a zero or a given
// state, and with gates so negative that exp of the cumulative gate
// underflows; and the rule's defining property (a write with beta = 1
// replaces the value stored under a unit key). On every usable backend:
// reference, cpu_onednn, simulated_device, and gpu_cuda on the CUDA
// emulator in the emulated twin (delta_rule_emulated_test).

#include "framework/attention/delta_rule.h"

#include <cmath>
#include <string>
#include <vector>

#include "framework/autograd/ops.h"
#include "framework/backend/backend_registry.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

struct Inputs {
  Var q, k, v, beta, gate, state;
};

// q, k (2, 3, 9, 4) L2-normalised, v (2, 3, 9, 5), beta (.., 1) in (0, 1),
// gates (.., 1) <= 0 scaled by gate_scale (or none), a random state or none.
Inputs Make(bool gated, float gate_scale, bool with_state) {
  Inputs in;
  in.q = Var(L2NormalizeLastDim(RandomVar({2, 3, 9, 4}, 1)).value());
  in.k = Var(L2NormalizeLastDim(RandomVar({2, 3, 9, 4}, 2)).value());
  in.v = RandomVar({2, 3, 9, 5}, 3);
  in.beta = Var(Sigmoid(RandomVar({2, 3, 9, 1}, 6, -3.0f, 3.0f)).value());
  if (gated) in.gate = Var(Scale(LogSigmoid(RandomVar({2, 3, 9, 1}, 4, -3.0f, 3.0f)), gate_scale).value());
  if (with_state) in.state = RandomVar({2, 3, 4, 5}, 5);
  return in;
}

// Output, final state (forms 1 and 2) and the gradients of q, k, v, beta,
// the gate and the state of a loss on the output (and on the final state
// when state_loss). form: 0 parallel, 1 chunked, 2 recurrent.
std::vector<Tensor> RunForm(const Inputs& in, int form, int64_t chunk, bool state_loss = true) {
  std::vector<Var> leaves = {in.q, in.k, in.v, in.beta, in.gate, in.state};
  for (Var& v : leaves)
    if (v.defined()) v.mutable_grad() = Tensor();
  GatedLinearOut r;
  if (form == 0) r.out = DeltaRuleParallel(in.q, in.k, in.v, in.beta, in.gate);
  if (form == 1) r = DeltaRuleChunked(in.q, in.k, in.v, in.beta, in.gate, in.state, chunk);
  if (form == 2) r = DeltaRuleRecurrent(in.q, in.k, in.v, in.beta, in.gate, in.state);
  Var loss = Project(r.out);
  if (state_loss && r.state.defined()) loss = Add(loss, Project(r.state, 99));
  Backward(loss);
  std::vector<Tensor> out = {r.out.value().Clone()};
  if (form != 0) out.push_back(r.state.value().Clone());
  for (Var& v : leaves)
    if (v.defined()) out.push_back(v.grad().defined() ? v.grad().Clone() : Tensor::Zeros(v.shape()));
  return out;
}

TEST(DeltaRule, ParallelChunkedAndRecurrentAgree) {
  for (const std::string& backend : UsableBackends())
  for (bool gated : {false, true}) {
    ScopedBackend scoped(backend);
    const std::string what = backend + (gated ? ", gated" : ", plain");
    const Inputs in = Make(gated, 1.0f, false);
    const std::vector<Tensor> oracle = RunForm(in, 0, 0);
    std::vector<Tensor> output_only = RunForm(in, 2, 0, /*state_loss=*/false);
    output_only.erase(output_only.begin() + 1);  // the final state, which the oracle lacks
    ExpectSameOutputAndGradients(output_only, oracle, what + ", recurrent vs parallel", 1e-5f);
    const std::vector<Tensor> recurrent = RunForm(in, 2, 0);
    for (int64_t chunk : {1, 2, 4, 5, 9, 32})
      ExpectSameOutputAndGradients(RunForm(in, 1, chunk), recurrent, what + ", chunk " + std::to_string(chunk), 1e-5f);
  }
}

TEST(DeltaRule, ChunkedFromAStateMatchesRecurrent) {
  for (const std::string& backend : UsableBackends())
  for (bool gated : {false, true}) {
    ScopedBackend scoped(backend);
    const Inputs in = Make(gated, 1.0f, true);
    const std::vector<Tensor> recurrent = RunForm(in, 2, 0);
    for (int64_t chunk : {2, 4, 9})
      ExpectSameOutputAndGradients(RunForm(in, 1, chunk), recurrent,
                                   backend + (gated ? ", gated" : ", plain") + ", chunk " + std::to_string(chunk), 1e-5f);
  }
}

// Log-gates down to about -150 per token: exp of the cumulative gate
// underflows to 0. The chunked form never exponentiates a positive number,
// so it stays finite and equals the recurrent one.
TEST(DeltaRule, StronglyNegativeGatesStayFinite) {
  for (const std::string& backend : UsableBackends()) {
    ScopedBackend scoped(backend);
    const Inputs in = Make(true, 50.0f, true);
    const std::vector<Tensor> recurrent = RunForm(in, 2, 0);
    for (int64_t chunk : {3, 9}) {
      const std::vector<Tensor> chunked = RunForm(in, 1, chunk);
      for (const Tensor& t : chunked)
        for (float x : t.ToVector()) ASSERT_TRUE(std::isfinite(x)) << backend << ", chunk " << chunk;
      ExpectSameOutputAndGradients(chunked, recurrent, backend + ", chunk " + std::to_string(chunk), 1e-5f);
    }
  }
}

// With beta_t = 1, no gate and a unit key, k_t S_t = v_t whatever the state
// held: the delta rule overwrites the value stored under k_t. Checked on
// the last token of the chunked form (chunk 4 of T = 9, a given state).
TEST(DeltaRule, AFullWriteReplacesTheValueUnderItsKey) {
  for (const std::string& backend : UsableBackends()) {
    ScopedBackend scoped(backend);
    Inputs in = Make(false, 1.0f, true);
    in.beta = Var(Tensor::Full({2, 3, 9, 1}, 1.0f));
    const GatedLinearOut r = DeltaRuleChunked(in.q, in.k, in.v, in.beta, Var(), in.state, 4);
    const Tensor read = MatMul(Slice(in.k, 2, 8, 1), r.state).value();  // (2, 3, 1, 5)
    const Tensor want = Slice(in.v, 2, 8, 1).value();
    EXPECT_LE(MaxAbsDiff(read, want), 2e-5f) << backend;
  }
}

TEST(DeltaRule, L2NormalizeGivesUnitRows) {
  const std::vector<float> got = L2NormalizeLastDim(Var(Tensor::FromVector({2, 2}, {3.0f, 4.0f, -1.0f, 0.0f}))).value().ToVector();
  const std::vector<double> want = {0.6, 0.8, -1.0, 0.0};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

}  // namespace
}  // namespace tvlab
