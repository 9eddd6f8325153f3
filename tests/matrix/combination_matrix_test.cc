// The combination matrix: every legal pair of values of the axes in
// tests/matrix/axes.txt (score, layout, position, family, ...) meets in at
// least one cell (matrix_cells.h), and every cell is a whole model, built
// from its spec as a run builds it, that must
//   - have gradients equal to finite differences,
//   - decode through the KV cache exactly as the full forward computes
//     (decoder-only and encoder-decoder),
//   - compute the same with the fused attention kernel as with the unfused
//     composition (<= 1e-5 relative, output and every gradient),
//   - give the same outputs after a save / load round trip of its weights,
//   - compute the same on reference, cpu_onednn and gpu_cuda (the CUDA
//     sources on the CPU emulator), with either attention kernel,
//   - train the same, bit for bit, eagerly and through a captured step
//     (train.step_capture), or say why its step cannot be captured.
// The test is sharded (Bazel shard_count): each shard computes the same
// covering array and runs its share of the cells.

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/attention/attend.h"
#include "framework/autograd/auxiliary_outputs.h"
#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend_registry.h"
#include "framework/capture/step_capture.h"
#include "framework/model/model.h"
#include "framework/train/checkpoint.h"
#include "framework/train/safetensors.h"
#include "gtest/gtest.h"
#include "tests/matrix/matrix_cells.h"

namespace tvlab {
namespace {

std::unique_ptr<Model> Build(const MatrixCell& cell, const Experiment& spec) {
  auto model = BuildModel(spec, cell.task->vocab_size(), HeadOutputs(*cell.task));
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

// The loss a training step minimises: the mean cross-entropy plus the
// weighted auxiliary losses (a mixture of experts' router losses, the extra
// heads of multi-token prediction), collected as the training loop does.
Var Loss(const Model& model, const Batch& batch) {
  AuxiliaryOutputs auxiliary;
  Var logits;  // (B, T', V)
  {
    AuxiliaryScope collect(&auxiliary);
    logits = model.Forward(batch, ForwardContext{});
  }
  return auxiliary.AddedTo(CrossEntropy(
      Reshape(logits, {batch.batch * logits.dim(1), logits.dim(2)}), batch.targets, kIgnoreTarget));
}

// Logits and every parameter's gradient of one forward + backward.
std::vector<Tensor> OutputAndGradients(const Model& model, const Batch& batch) {
  auto params = model.NamedParameters();
  for (auto& [name, var] : params) var.ZeroGrad();
  Var logits = model.Forward(batch, ForwardContext{});
  Backward(CrossEntropy(Reshape(logits, {batch.batch * logits.dim(1), logits.dim(2)}),
                        batch.targets, kIgnoreTarget));
  std::vector<Tensor> out = {logits.value().Clone()};
  for (auto& [name, var] : params) out.push_back(var.grad().defined() ? var.grad().Clone() : Tensor());
  return out;
}

// Largest |a - b| (tensors on any device).
float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.ToVector(), y = b.ToVector();
  EXPECT_EQ(x.size(), y.size());
  float m = 0.0f;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

// Each tensor within `relative` of its largest entry, floored at a tenth of
// the largest entry of all of them, as the attention conformance suite does
// (a gradient far below the others is a sum of cancelling terms of their
// size).
void ExpectSame(const std::vector<Tensor>& got, const std::vector<Tensor>& want, float relative,
                const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
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
        << where << (i == 0 ? ", logits" : ", gradient of parameter " + std::to_string(i - 1));
  }
}

class CombinationMatrix : public ::testing::TestWithParam<int> {
 protected:
  const MatrixCell& cell() const { return TheMatrix().cells[GetParam()]; }
  Batch TrainRows(int64_t rows) const { return cell().task->TrainBatch(cell().spec.seed(), 0, rows); }
  void TearDown() override { SetAttentionKernel(AttentionKernel::kAuto); }
};

TEST_P(CombinationMatrix, GradientsMatchFiniteDifferences) {
  auto model = Build(cell(), cell().spec);
  ASSERT_NE(model, nullptr);
  const Batch batch = TrainRows(2);
  std::vector<Var> params;
  std::string names;  // "input i" of GradCheck's message is parameter i
  for (auto& [name, var] : model->NamedParameters()) {
    names += absl::StrCat(" ", params.size(), "=", name);
    params.push_back(var);
  }
  GradCheckOptions options;
  options.max_elements_per_input = 3;  // evenly spaced, in every parameter tensor
  // Central differences in float32 have two errors that pull the step in
  // opposite directions: their own O(step^2) truncation error, large on the
  // most curved cells (a recurrent mixer's norm over heads of hs = 4, an
  // output-only peri-LN on a small attention output: 0.0205 off at 1e-2,
  // 0.0020 at 3e-3, 0.00016 at 1e-3; RetNet under post-LN with memory tokens
  // and an MTP layer: fails at 2e-3, passes at 1e-3), and the loss's float32
  // rounding divided by the step, large where the loss is (a tied head on
  // N(0, 1) embeddings with deepnorm: differences of exactly 0 at 1e-3 where
  // autograd says -0.0021; passes at 3e-3 and 1e-2). So the check tries three
  // steps and passes when one agrees: a gradient wrong by more than the
  // tolerance disagrees at every step.
  std::string failures;
  for (float step : {3e-3f, 1e-3f, 1e-2f}) {
    options.epsilon = step;
    GradCheckResult r = GradCheck([&](const std::vector<Var>&) { return Loss(*model, batch); },
                                  params, options);
    if (r.ok) return;
    failures += absl::StrCat("\nstep ", step, ": ", r.message);
  }
  ADD_FAILURE() << "no step agrees:" << failures << "\nparameters:" << names;
}

TEST_P(CombinationMatrix, KvCacheDecodingEqualsRecomputation) {
  auto model = Build(cell(), cell().spec);
  ASSERT_NE(model, nullptr);
  if (!model->SupportsDecoding()) GTEST_SKIP() << "encoder-only: nothing decodes";
  const Batch batch = TrainRows(1);
  ASSERT_GE(batch.length, 3);
  NoGradGuard no_grad;
  const Tensor full = model->Forward(batch, ForwardContext{}).value();  // (1, T, V)
  const int64_t v = full.dim(2);
  DecodeState state = model->BeginDecoding(batch, /*use_cache=*/true);
  // A prefill of 2 tokens, then one token at a time.
  std::vector<Tensor> steps = {
      model->DecodeStep(&state, {batch.inputs[0], batch.inputs[1]}, 2).value()};
  for (int64_t t = 2; t < batch.length; ++t)
    steps.push_back(model->DecodeStep(&state, {batch.inputs[t]}, 1).value());
  EXPECT_GT(state.self_caches[0].length(), 0) << "nothing was cached";
  int64_t t = 0;
  const std::vector<float> want = full.ToVector();
  for (const Tensor& s : steps) {
    const std::vector<float> got = s.ToVector();
    for (int64_t i = 0; i < s.dim(1); ++i, ++t)
      for (int64_t c = 0; c < v; ++c)
        ASSERT_NEAR(got[i * v + c], want[t * v + c], 1e-5) << "position " << t;
  }
}

TEST_P(CombinationMatrix, FusedAttentionEqualsUnfused) {
  auto model = Build(cell(), cell().spec);
  ASSERT_NE(model, nullptr);
  const Batch batch = TrainRows(2);
  const int64_t before = FusedAttentionCalls();
  SetAttentionKernel(AttentionKernel::kFused);
  const std::vector<Tensor> fused = OutputAndGradients(*model, batch);
  const int64_t fused_calls = FusedAttentionCalls() - before;
  SetAttentionKernel(AttentionKernel::kUnfused);
  const std::vector<Tensor> unfused = OutputAndGradients(*model, batch);
  EXPECT_EQ(FusedAttentionCalls() - before, fused_calls) << "the unfused policy ran the kernel";
  RecordProperty("fused_attention_calls", static_cast<int>(fused_calls));
  ExpectSame(fused, unfused, 1e-5f, "fused vs unfused");
}

TEST_P(CombinationMatrix, WeightsSurviveASaveLoadRoundTrip) {
  auto model = Build(cell(), cell().spec);
  ASSERT_NE(model, nullptr);
  Experiment other_seed = cell().spec;
  other_seed.set_seed(cell().spec.seed() + 1);
  auto loaded = Build(cell(), other_seed);
  ASSERT_NE(loaded, nullptr);
  const Batch batch = TrainRows(2);
  NoGradGuard no_grad;
  const std::vector<float> want = model->Forward(batch, ForwardContext{}).value().ToVector();
  ASSERT_NE(loaded->Forward(batch, ForwardContext{}).value().ToVector(), want)
      << "two seeds gave the same model: the round trip would prove nothing";
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/", cell().name, ".safetensors");
  ASSERT_TRUE(WriteSafetensors(path, model->NamedParameters()).ok());
  absl::Status s = LoadWeights(path, loaded->NamedParameters());
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(loaded->Forward(batch, ForwardContext{}).value().ToVector(), want);
}

// The model built on each backend (its parameters in that backend's
// memory) against the one on reference, with each attention kernel policy.
TEST_P(CombinationMatrix, EveryBackendEqualsReference) {
  const Batch batch = TrainRows(2);
  const std::vector<std::string> usable = UsableBackends();
  for (AttentionKernel policy : {AttentionKernel::kUnfused, AttentionKernel::kFused}) {
    SetAttentionKernel(policy);
    std::vector<Tensor> want;
    {
      ScopedBackend scoped("reference");
      want = OutputAndGradients(*Build(cell(), cell().spec), batch);
    }
    for (const std::string backend : {"cpu_onednn", "gpu_cuda"}) {
      ASSERT_NE(std::find(usable.begin(), usable.end(), backend), usable.end())
          << backend << " is not usable in this test binary";
      ScopedBackend scoped(backend);
      const std::vector<Tensor> got = OutputAndGradients(*Build(cell(), cell().spec), batch);
      ExpectSame(got, want, 1e-5f,
                 absl::StrCat(backend, policy == AttentionKernel::kFused ? ", fused" : ", unfused"));
    }
  }
}

// Seven steps of the cell's model on cpu_onednn, each a forward and backward
// pass of the training loss (auxiliary losses included) at dropout key
// `step` followed by a host SGD update: the losses and gradients of every
// step, eager or through StepCapture (which replays steps 4 to 6).
struct StepTrace {
  std::vector<std::vector<float>> values;  // per step: the loss, then every gradient
  std::string summary;
  int64_t replayed = 0;
};

StepTrace TrainSteps(const MatrixCell& cell, const Batch& batch, TrainSpec::StepCapture mode) {
  std::unique_ptr<Model> model = Build(cell, cell.spec);
  const auto params = model->NamedParameters();
  std::ostringstream progress;
  StepCapture capture(mode, "", params, progress);
  StepTrace trace;
  for (int64_t step = 0; step < 7; ++step) {
    for (const auto& [name, var] : params) Var(var).ZeroGrad();
    auto eager = [&]() {
      AuxiliaryOutputs auxiliary;
      Var logits;  // (B, T', V)
      {
        AuxiliaryScope collect(&auxiliary);
        logits = model->Forward(batch, ForwardContext{true, 3, step});
      }
      const Var loss = auxiliary.AddedTo(CrossEntropy(
          Reshape(logits, {batch.batch * logits.dim(1), logits.dim(2)}), batch.targets, kIgnoreTarget));
      capture.MarkBackward();
      Backward(loss);
      return EagerStep{loss.value(), 0.0};
    };
    auto done = capture.Run(step, batch, eager);
    EXPECT_TRUE(done.ok()) << done.status();
    if (!done.ok()) break;
    trace.values.push_back({static_cast<float>(done->loss)});
    for (const auto& [name, var] : params) {
      if (!var.grad().defined()) continue;
      const std::vector<float> g = var.grad().ToVector();
      trace.values.push_back(g);
      float* p = Var(var).mutable_value().data();  // host: cpu_onednn's parameters, a test's SGD
      for (size_t i = 0; i < g.size(); ++i) p[i] -= 0.01f * g[i];
    }
  }
  trace.summary = capture.summary();
  trace.replayed = capture.replayed_steps();
  return trace;
}

TEST_P(CombinationMatrix, CapturedStepsEqualEagerSteps) {
  ScopedBackend scoped("cpu_onednn");
  const Batch batch = TrainRows(2);
  const StepTrace eager = TrainSteps(cell(), batch, TrainSpec::CAPTURE_OFF);
  const StepTrace captured = TrainSteps(cell(), batch, TrainSpec::CAPTURE_AUTO);
  EXPECT_TRUE(captured.values == eager.values) << "captured steps differ from eager ones: " << captured.summary;
  // Either replayed (steps 4 to 6) or off with its reason.
  if (captured.replayed == 0) {
    EXPECT_EQ(captured.summary.rfind("off: ", 0), 0u) << captured.summary;
    std::cout << "[capture off] " << cell().name << ": " << captured.summary << "\n";
  } else {
    EXPECT_EQ(captured.replayed, 3) << captured.summary;
  }
}

std::vector<int> CellIndices() {
  std::vector<int> indices(TheMatrix().cells.size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int>(i);
  return indices;
}

INSTANTIATE_TEST_SUITE_P(Pairwise, CombinationMatrix, ::testing::ValuesIn(CellIndices()),
                         [](const auto& info) { return TheMatrix().cells[info.param].name; });

// What the matrix covers and what validation refused, printed for the log.
TEST(CombinationMatrixCoverage, CoversEveryLegalPairInFewerCellsThanTheProduct) {
  const Matrix& m = TheMatrix();
  int64_t product = 1, pairs = 0;
  for (size_t a = 0; a < m.axes.size(); ++a) {
    product *= static_cast<int64_t>(m.axes[a].values.size());
    for (size_t b = a + 1; b < m.axes.size(); ++b)
      pairs += static_cast<int64_t>(m.axes[a].values.size() * m.axes[b].values.size());
  }
  std::cout << m.axes.size() << " axes, " << product << " cells in the full product, " << pairs
            << " pairs; " << m.cells.size() << " cells tested, " << m.array.illegal_pairs.size()
            << " pairs illegal, " << m.array.cells_refused << " of " << m.array.oracle_calls
            << " cells asked refused by validation\n";
  int64_t refused = 0;
  for (const auto& [message, r] : m.refusals) {
    std::cout << "  refused " << r.cells << " cells (first: " << r.first_cell << "): " << message << "\n";
    refused += r.cells;
  }
  for (const ValuePair& p : m.array.illegal_pairs)
    std::cout << "  illegal pair: " << m.axes[p.axis_a].name << "="
              << m.axes[p.axis_a].values[p.value_a].name << ", " << m.axes[p.axis_b].name << "="
              << m.axes[p.axis_b].values[p.value_b].name << "\n";
  RecordProperty("cells", static_cast<int>(m.cells.size()));
  RecordProperty("illegal_pairs", static_cast<int>(m.array.illegal_pairs.size()));
  RecordProperty("refused_cells", static_cast<int>(m.array.cells_refused));
  ASSERT_FALSE(m.cells.empty());
  EXPECT_LT(static_cast<int64_t>(m.cells.size()), product);
  EXPECT_EQ(refused, m.array.cells_refused);
}

// The bounded search (covering_array.h) reports a pair illegal when no legal
// cell lies within two changes of the defaults or of its greedy completion.
// A check that it is not wrong: for each such pair, random completions are
// all refused too; one that validation accepts fails here with the cell to
// look at (the search's bound is then too small for the axes).
TEST(CombinationMatrixCoverage, RandomCompletionsOfAnIllegalPairAreRefusedToo) {
  const Matrix& m = TheMatrix();
  constexpr int kSamples = 100;
  uint64_t state = 0x9e3779b97f4a7c15ULL;  // a fixed stream: the same cells on every run
  auto next = [&state](int bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % static_cast<uint64_t>(bound));
  };
  for (const ValuePair& p : m.array.illegal_pairs) {
    for (int sample = 0; sample < kSamples; ++sample) {
      Cell cell(m.axes.size());
      for (size_t a = 0; a < cell.size(); ++a) cell[a] = next(static_cast<int>(m.axes[a].values.size()));
      cell[p.axis_a] = p.value_a;
      cell[p.axis_b] = p.value_b;
      std::vector<std::string> names;
      for (size_t a = 0; a < cell.size(); ++a) names.push_back(m.axes[a].values[cell[a]].name);
      ASSERT_FALSE(CellIsLegal(m, cell))
          << "the pair " << m.axes[p.axis_a].name << "=" << m.axes[p.axis_a].values[p.value_a].name
          << ", " << m.axes[p.axis_b].name << "=" << m.axes[p.axis_b].values[p.value_b].name
          << " was reported illegal, but validation accepts the cell " << absl::StrJoin(names, "_");
    }
  }
}

}  // namespace
}  // namespace tvlab
