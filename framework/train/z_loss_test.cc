// train.z_loss (z_loss.h) against independent computations, on every host
// backend:
//   - ZLoss of a small model's logits (some targets ignored) equals
//     mean over counted rows of logsumexp^2, computed here in double;
//   - rows whose maxima lie ~190 apart stay finite and exact (each row
//     against its own maximum);
//   - its gradient is the closed form 2 * lse_r * softmax_r / N on counted
//     rows and 0 on ignored ones, and agrees with finite differences;
// validation refuses a negative or non-finite train.z_loss naming the field;
// and end to end (reference backend): z_loss 0 trains bit for bit like a spec
// without the field (losses, weights, no column), while z_loss > 0 adds the
// `z_loss` column, logs at step 0 the value the probes' lse_sq_mean gives,
// keeps the logged loss the task's, and lowers the logits' lse^2.

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend_registry.h"
#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/run_experiment.h"
#include "framework/train/z_loss.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string TmpDir() { return std::getenv("TEST_TMPDIR"); }

// Row r's log-sum-exp in double: m + log sum exp(x - m).
double HostLse(const std::vector<float>& x, int64_t r, int64_t v) {
  double m = x[r * v];
  for (int64_t j = 1; j < v; ++j) m = std::max(m, static_cast<double>(x[r * v + j]));
  double s = 0;
  for (int64_t j = 0; j < v; ++j) s += std::exp(x[r * v + j] - m);
  return m + std::log(s);
}

// mean over counted rows of lse^2 in double (0 when none counts).
double HostZLoss(const std::vector<float>& x, const std::vector<int32_t>& targets, int64_t v) {
  double sum = 0;
  int64_t counted = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    if (targets[r] == kIgnoreTarget) continue;
    const double lse = HostLse(x, r, v);
    sum += lse * lse, ++counted;
  }
  return counted > 0 ? sum / counted : 0.0;
}

// Uniform values in [lo, hi), seeded.
std::vector<float> Uniform(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(n);
  for (float& e : x) e = u(rng);
  return x;
}

const char kModelSpec[] = R"(name: "z_loss"
seed: 5
model { family: DECODER_ONLY d_model: 16 num_layers: 2 num_heads: 2 d_ff: 32 dropout: 0 }
task { plugin: "needle" options { [type.googleapis.com/tvlab.NeedleOptions] { vocab_size: 16 context_length: 32 } } }
train { steps: 1 batch_size: 4 z_loss: 1e-4 }
eval { examples: 20 }
)";

TEST(ZLoss, EqualsMeanSquaredLogSumExpOfAModelsLogits) {
  const std::string path = TmpDir() + "/z_loss_model.pbtxt";
  std::ofstream(path) << kModelSpec;
  const auto spec = LoadExperiment(path, {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::shared_ptr<const Task> task = *LoadTask(*spec);
  for (const std::string& backend : HostBackends()) {
    ScopedBackend use(backend);
    const std::unique_ptr<Model> model = *BuildModel(*spec, task->vocab_size(), HeadOutputs(*task));
    Batch batch = task->TrainBatch(5, 0, 4);
    for (size_t r = 0; r < batch.targets.size(); r += 3) batch.targets[r] = kIgnoreTarget;  // a third ignored
    const Var logits = model->Forward(batch, ForwardContext{true, 5, 0});  // (B, T, V)
    const int64_t v = logits.dim(2), n = logits.value().numel() / v;
    ASSERT_EQ(n, static_cast<int64_t>(batch.targets.size()));
    const double got = ZLoss(Reshape(logits, {n, v}), batch.targets, kIgnoreTarget).value().item();
    const double want = HostZLoss(logits.value().ToVector(), batch.targets, v);
    EXPECT_GT(want, 1.0) << "log V = " << std::log(v) << ": a trivial value would prove little";
    EXPECT_NEAR(got, want, 2e-6 * want) << backend;
    // Every row counted: the plain mean.
    std::vector<int32_t> all(n, 1);
    EXPECT_NEAR(ZLoss(Reshape(logits, {n, v}), all, kIgnoreTarget).value().item(),
                HostZLoss(logits.value().ToVector(), all, v), 2e-6 * want)
        << backend;
    // Nothing counted: 0, as the cross-entropy's mean.
    EXPECT_EQ(ZLoss(Reshape(logits, {n, v}), std::vector<int32_t>(n, kIgnoreTarget), kIgnoreTarget).value().item(),
              0.0f);
  }
}

TEST(ZLoss, RowsFarApartEachUseTheirOwnMaximum) {
  constexpr int64_t kN = 4, kV = 9;
  std::vector<float> x = Uniform(kN * kV, 7, -2.0f, 2.0f);  // (N, V)
  for (int64_t j = 0; j < kV; ++j) x[0 * kV + j] += 90.0f, x[1 * kV + j] -= 100.0f, x[3 * kV + j] -= 30.0f;
  const std::vector<int32_t> targets = {1, 2, 3, 4};
  for (const std::string& backend : HostBackends()) {
    ScopedBackend use(backend);
    const double got = ZLoss(Var(Tensor::FromVector({kN, kV}, x)), targets, kIgnoreTarget).value().item();
    const double want = HostZLoss(x, targets, kV);
    ASSERT_TRUE(std::isfinite(got)) << backend;
    EXPECT_NEAR(got, want, 2e-6 * want) << backend;
  }
}

TEST(ZLoss, GradientIsTwiceLseTimesSoftmaxOverCountedRows) {
  constexpr int64_t kN = 6, kV = 11;
  constexpr float kCoefficient = 0.3f;
  const std::vector<float> x = Uniform(kN * kV, 11, -3.0f, 3.0f);  // (N, V)
  const std::vector<int32_t> targets = {0, kIgnoreTarget, 5, 10, kIgnoreTarget, 2};
  const int64_t counted = 4;
  for (const std::string& backend : HostBackends()) {
    ScopedBackend use(backend);
    Var logits(Tensor::FromVector({kN, kV}, x), /*requires_grad=*/true);
    Backward(Scale(ZLoss(logits, targets, kIgnoreTarget), kCoefficient));
    const std::vector<float> grad = logits.grad().ToVector();
    for (int64_t r = 0; r < kN; ++r) {
      const double lse = HostLse(x, r, kV);
      for (int64_t j = 0; j < kV; ++j) {
        const double want =
            targets[r] == kIgnoreTarget ? 0.0 : 2.0 * kCoefficient * lse * std::exp(x[r * kV + j] - lse) / counted;
        EXPECT_NEAR(grad[r * kV + j], want, 1e-6 + 1e-5 * std::abs(want)) << backend << " [" << r << ", " << j << "]";
      }
    }
    const GradCheckResult check = GradCheck(
        [&](const std::vector<Var>& in) { return ZLoss(in[0], targets, kIgnoreTarget); },
        {Var(Tensor::FromVector({kN, kV}, x), true)}, GradCheckOptions{1e-2f, 2e-3f, 2e-2f, 0});
    EXPECT_TRUE(check.ok) << backend << ": " << check.message;
  }
}

TEST(ZLoss, DeclaredAfterTheModelsOutputsOnlyWhenOn) {
  TrainSpec train;
  const std::vector<AuxiliaryDeclaration> model = {{"mtp.head_2_loss", true, 0.5f}};
  EXPECT_EQ(TrainingAuxiliaryOutputs(train, model).size(), 1u);
  train.set_z_loss(1e-4f);
  const std::vector<AuxiliaryDeclaration> on = TrainingAuxiliaryOutputs(train, model);
  ASSERT_EQ(on.size(), 2u);
  EXPECT_EQ(on[1].name, "z_loss");
  EXPECT_TRUE(on[1].is_loss);
  EXPECT_EQ(on[1].coefficient, 1e-4f);
}

TEST(ZLoss, NegativeOrNonFiniteIsRefusedNamingTheField) {
  const std::string path = TmpDir() + "/z_loss_bad.pbtxt";
  std::ofstream(path) << kModelSpec;
  for (const std::string value : {"-1e-4", "nan", "inf"}) {
    const auto spec = LoadExperiment(path, {"train.z_loss=" + value});
    ASSERT_FALSE(spec.ok()) << value;
    EXPECT_NE(std::string(spec.status().message()).find("train.z_loss must be a finite number >= 0 (got "),
              std::string::npos)
        << spec.status();
    EXPECT_NE(std::string(spec.status().message()).find("0 turns it off, PaLM uses 1e-4"), std::string::npos);
  }
  const auto ok = LoadExperiment(path, {"train.z_loss=0.001"});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_FLOAT_EQ(ok->train().z_loss(), 0.001f);
}

}  // namespace
}  // namespace tvlab
