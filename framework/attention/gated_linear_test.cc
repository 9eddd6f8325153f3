// The gated linear kernel's three forms against each other, with per-key
// gates (GLA), one gate per head (RetNet) and none (linear attention),
// from a given state, and with gates so negative that exp of the
// cumulative gate underflows: the forms must stay finite and agree. On
// every usable backend: reference, cpu_onednn, simulated_device, and
// gpu_cuda on the CUDA emulator in the emulated twin
// (gated_linear_emulated_test). The chunked form is the fused scan
// (Backend::GatedLinearScan) on every one of them; the same chunks composed
// of autograd ops (GatedLinearChunkedComposed) are its oracle.

#include "framework/attention/gated_linear.h"

#include <cmath>
#include <vector>

#include "framework/autograd/ops.h"
#include "framework/backend/backend_registry.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

struct Inputs {
  Var q, k, v, gate, state;
};

// q, k (2, 3, t, 4), v (2, 3, t, 5), gates (.., gate_dim) <= 0 scaled by
// gate_scale (0 gate_dim = none), a random state or none.
Inputs Make(int64_t gate_dim, float gate_scale, bool with_state, int64_t t = 9) {
  Inputs in;
  in.q = RandomVar({2, 3, t, 4}, 1);
  in.k = RandomVar({2, 3, t, 4}, 2);
  in.v = RandomVar({2, 3, t, 5}, 3);
  if (gate_dim > 0) in.gate = Var(Scale(LogSigmoid(RandomVar({2, 3, t, gate_dim}, 4, -3.0f, 3.0f)), gate_scale).value());
  if (with_state) in.state = RandomVar({2, 3, 4, 5}, 5);
  return in;
}

// Output, final state (forms 1, 2 and 3) and the gradients of q, k, v, the
// gate and the state of a loss on the output (and on the final state when
// state_loss). form: 0 parallel, 1 chunked (fused), 2 recurrent, 3 chunked
// composed of autograd ops.
std::vector<Tensor> RunForm(const Inputs& in, int form, int64_t chunk, bool state_loss = true) {
  std::vector<Var> leaves = {in.q, in.k, in.v, in.gate, in.state};
  for (Var& v : leaves)
    if (v.defined()) v.mutable_grad() = Tensor();
  GatedLinearOut r;
  if (form == 0) r.out = GatedLinearParallel(in.q, in.k, in.v, in.gate);
  if (form == 1) r = GatedLinearChunkedFused(in.q, in.k, in.v, in.gate, in.state, chunk);
  if (form == 2) r = GatedLinearRecurrent(in.q, in.k, in.v, in.gate, in.state);
  if (form == 3) r = GatedLinearChunkedComposed(in.q, in.k, in.v, in.gate, in.state, chunk);
  Var loss = Project(r.out);
  if (state_loss && r.state.defined()) loss = Add(loss, Project(r.state, 99));
  Backward(loss);
  std::vector<Tensor> out = {r.out.value().Clone()};
  if (form != 0) out.push_back(r.state.value().Clone());
  for (Var& v : leaves)
    if (v.defined()) out.push_back(v.grad().defined() ? v.grad().Clone() : Tensor::Zeros(v.shape()));
  return out;
}

TEST(GatedLinear, ParallelChunkedAndRecurrentAgree) {
  for (const std::string& backend : UsableBackends())
  for (int64_t gate_dim : {0, 1, 4}) {
    ScopedBackend scoped(backend);
    const Inputs in = Make(gate_dim, 1.0f, false);
    const std::vector<Tensor> oracle = RunForm(in, 0, 0);
    std::vector<Tensor> output_only = RunForm(in, 2, 0, /*state_loss=*/false);
    output_only.erase(output_only.begin() + 1);  // the final state, which the oracle lacks
    ExpectSameOutputAndGradients(output_only, oracle, backend + ", recurrent vs parallel, gate " + std::to_string(gate_dim),
                                 1e-5f);
    const std::vector<Tensor> recurrent = RunForm(in, 2, 0);
    for (int64_t chunk : {1, 2, 4, 5, 9, 32})
      ExpectSameOutputAndGradients(RunForm(in, 1, chunk), recurrent,
                                   backend + ", chunk " + std::to_string(chunk) + ", gate " + std::to_string(gate_dim), 1e-5f);
  }
}

TEST(GatedLinear, ChunkedFromAStateMatchesRecurrent) {
  for (const std::string& backend : UsableBackends())
  for (int64_t gate_dim : {0, 1, 4}) {
    ScopedBackend scoped(backend);
    const Inputs in = Make(gate_dim, 1.0f, true);
    std::vector<Tensor> recurrent = RunForm(in, 2, 0);
    for (int64_t chunk : {2, 4, 9})
      ExpectSameOutputAndGradients(RunForm(in, 1, chunk), recurrent,
                                   backend + ", chunk " + std::to_string(chunk) + ", gate " + std::to_string(gate_dim), 1e-5f);
  }
}

// The fused scan against the chunks composed of autograd ops and against
// the parallel form: outputs, final state and every gradient, per-key,
// per-head and no gates, from a zero or a given state, chunk sizes that do
// and do not divide T (9 and 37 tokens).
TEST(GatedLinear, FusedScanMatchesComposedChunksAndParallel) {
  for (const std::string& backend : UsableBackends()) {
    ScopedBackend scoped(backend);
    ASSERT_TRUE(CurrentBackendDescriptor().Implements(Kernel::kGatedLinearScan)) << backend;
    ASSERT_TRUE(CurrentBackendDescriptor().Implements(Kernel::kGatedLinearScanBackward)) << backend;
    for (int64_t t : {9, 37})
    for (int64_t gate_dim : {0, 1, 4})
    for (bool with_state : {false, true}) {
      const Inputs in = Make(gate_dim, 1.0f, with_state, t);
      const std::string what = backend + ", T " + std::to_string(t) + ", gate " + std::to_string(gate_dim) +
                               (with_state ? ", from a state" : "");
      if (!with_state) {
        const std::vector<Tensor> oracle = RunForm(in, 0, 0);
        std::vector<Tensor> fused = RunForm(in, 1, 5, /*state_loss=*/false);
        fused.erase(fused.begin() + 1);  // the final state, which the parallel form lacks
        ExpectSameOutputAndGradients(fused, oracle, what + ", fused vs parallel", 1e-5f);
      }
      for (int64_t chunk : {1, 2, 4, 5, 9, 16, 64})
        ExpectSameOutputAndGradients(RunForm(in, 1, chunk), RunForm(in, 3, chunk),
                                     what + ", chunk " + std::to_string(chunk) + ", fused vs composed", 1e-5f);
    }
  }
}

// Only the final state carries a loss: its gradient alone reaches the
// inputs through the fused scan.
TEST(GatedLinear, FusedScanGradientFromTheStateAlone) {
  for (const std::string& backend : UsableBackends()) {
    ScopedBackend scoped(backend);
    const Inputs in = Make(4, 1.0f, true);
    auto run = [&](bool fused) {
      std::vector<Var> leaves = {in.q, in.k, in.v, in.gate, in.state};
      for (Var& v : leaves) v.mutable_grad() = Tensor();
      GatedLinearOut r = fused ? GatedLinearChunkedFused(in.q, in.k, in.v, in.gate, in.state, 4)
                               : GatedLinearChunkedComposed(in.q, in.k, in.v, in.gate, in.state, 4);
      Backward(Project(r.state, 7));
      std::vector<Tensor> out = {r.state.value().Clone()};
      for (Var& v : leaves)
        out.push_back(v.grad().defined() ? v.grad().Clone() : Tensor::Zeros(v.shape()));  // q gets none
      return out;
    };
    ExpectSameOutputAndGradients(run(true), run(false), backend + ", state loss only", 1e-5f);
  }
}

// log-gates down to about -150 per token: the cumulative gate over 9
// tokens reaches about -1350, whose exp underflows to 0. The chunked form
// never exponentiates a positive number, so it stays finite and equals the
// recurrent one.
TEST(GatedLinear, StronglyNegativeGatesStayFinite) {
  for (const std::string& backend : UsableBackends()) {
  ScopedBackend scoped(backend);
  const Inputs in = Make(4, 50.0f, true);
  std::vector<Tensor> recurrent = RunForm(in, 2, 0);
  for (int64_t chunk : {3, 9}) {
    for (int form : {1, 3}) {
      std::vector<Tensor> chunked = RunForm(in, form, chunk);
      for (const Tensor& t : chunked)
        for (float x : t.ToVector()) ASSERT_TRUE(std::isfinite(x)) << backend << ", chunk " << chunk;
      ExpectSameOutputAndGradients(chunked, recurrent,
                                   backend + ", chunk " + std::to_string(chunk) + ", form " + std::to_string(form), 1e-5f);
    }
  }
  }
}

TEST(GatedLinear, LogSigmoidIsStableAndExact) {
  Var x(Tensor::FromVector({5}, {-200.0f, -3.0f, 0.0f, 3.0f, 200.0f}));
  const std::vector<float> got = LogSigmoid(x).value().ToVector();
  const std::vector<double> want = {-200.0, -3.048587351573742, -0.6931471805599453,
                                    -0.04858735157374206, 0.0};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * (1.0 + std::fabs(want[i]))) << i;
}

}  // namespace
}  // namespace tvlab
