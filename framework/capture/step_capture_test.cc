// StepCapture on a small step built from autograd ops (an embedding of the
// batch's tokens, dropout keyed by the step, a host scalar): the replayed
// steps give the eager steps' losses and gradients bit for bit, and every
// way a step can escape a recording (host data, a read-back, a released
// buffer, a host value that changes later, another shape) turns capture
// off with a reason, or falls back to eager for one step, never replays
// wrong numbers.

#include "framework/capture/step_capture.h"

#include <sstream>
#include <string>
#include <vector>

#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// The batch of `step`: 6 tokens of a 5-word vocabulary (length 6, or
// `length` when given); no targets (an array the step does not upload
// must not change, or replay could not follow it).
Batch BatchAt(int64_t step, int64_t length = 6) {
  Batch b;
  b.batch = 1;
  b.length = length;
  for (int64_t i = 0; i < length; ++i) b.inputs.push_back(static_cast<int32_t>((step * 7 + i * 3) % 5));
  return b;
}

// What a step does besides the ops (the ways it can escape capture).
struct Quirks {
  bool upload_step_value = false;   // uploads a host value derived from the step
  bool read_back = false;           // reads an intermediate on the host
  int64_t scale_changes_at = -1;    // a host scalar that changes at this step
};

struct Trained {
  std::vector<float> losses;
  std::vector<std::vector<float>> grads;
  std::vector<bool> replayed;
  std::string summary;
  absl::Status status;
};

// Trains `steps` steps of plain SGD on an embedding table under `mode`;
// `table` (a lookup table outside the parameters) is replaced after step
// `replace_table_after` when >= 0; `short_step` gets a shorter batch.
Trained Train(TrainSpec::StepCapture mode, const Quirks& quirks, int64_t steps = 10, int64_t replace_table_after = -1,
          int64_t short_step = -1) {
  Var w(Tensor::FromVector({5, 3}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, 0.9f, -1.0f, 1.1f, 1.2f,
                                    -1.3f, 1.4f, 1.5f}),
        true);
  Var table(Tensor::FromVector({1, 3}, {0.5f, 1.5f, -0.5f}));
  const std::vector<std::pair<std::string, Var>> params = {{"w", w}};
  std::ostringstream progress;
  StepCapture capture(mode, "", params, progress);
  Trained run;
  for (int64_t step = 0; step < steps; ++step) {
    w.ZeroGrad();
    const Batch batch = BatchAt(step, step == short_step ? 4 : 6);
    auto eager = [&]() {
      Var x = Embedding(w, batch.inputs);                                       // (T, 3)
      x = Dropout(x, 0.5f, RngStream(9, RngPurpose::kDropout, static_cast<uint64_t>(step)));
      x = Mul(x, table);                                                        // (T, 3)
      if (quirks.upload_step_value) x = AddScalar(Add(x, Var(Tensor::FromVector({1}, {step * 0.5f}))), 0.0f);
      if (quirks.read_back) x = Scale(x, 1.0f + 0.0f * Sum(x).value().item());
      const float s = quirks.scale_changes_at >= 0 && step >= quirks.scale_changes_at ? 2.0f : 1.0f;
      const Var loss = Mean(Square(Scale(x, s)));                               // ()
      capture.MarkBackward();
      Backward(loss);
      return EagerStep{loss.value(), 0.0};
    };
    auto done = capture.Run(step, batch, eager);
    if (!done.ok()) {
      run.status = done.status();
      break;
    }
    run.losses.push_back(static_cast<float>(done->loss));
    run.replayed.push_back(done->replayed);
    run.grads.push_back(w.grad().ToVector());
    // SGD on the host: the parameter changes in place between steps.
    float* p = w.mutable_value().data();
    const std::vector<float> g = w.grad().ToVector();
    for (size_t i = 0; i < g.size(); ++i) p[i] -= 0.5f * g[i];
    if (step == replace_table_after) table = Var(Tensor::FromVector({1, 3}, {0.5f, 1.5f, -0.5f}));
  }
  run.summary = capture.summary();
  return run;
}

int64_t Replayed(const Trained& run) {
  int64_t n = 0;
  for (bool r : run.replayed) n += r;
  return n;
}

class StepCaptureTest : public ::testing::TestWithParam<std::string> {
 protected:
  ScopedBackend backend_{GetParam()};
};

TEST_P(StepCaptureTest, ReplayGivesTheEagerLossesAndGradientsBitForBit) {
  const Trained eager = Train(TrainSpec::CAPTURE_OFF, {});
  const Trained captured = Train(TrainSpec::CAPTURE_REQUIRED, {});
  ASSERT_TRUE(captured.status.ok()) << captured.status;
  EXPECT_EQ(captured.summary.rfind("on from step 4:", 0), 0u) << captured.summary;
  EXPECT_EQ(Replayed(captured), 6);  // steps 4 .. 9
  EXPECT_EQ(captured.losses, eager.losses);
  EXPECT_EQ(captured.grads, eager.grads);
  // Dropout is keyed by the step: replays draw new masks (losses differ
  // from step to step for the same weights' batch).
  EXPECT_NE(captured.grads[4], captured.grads[5]);
}

TEST_P(StepCaptureTest, HostDataThatChangesIsRefused) {
  const Trained run = Train(TrainSpec::CAPTURE_AUTO, Quirks{true, false, -1});
  EXPECT_EQ(Replayed(run), 0);
  EXPECT_NE(run.summary.find("uploads different host data"), std::string::npos) << run.summary;
  EXPECT_EQ(run.losses, Train(TrainSpec::CAPTURE_OFF, Quirks{true, false, -1}).losses);
}

TEST_P(StepCaptureTest, AReadBackIsRefused) {
  const Trained run = Train(TrainSpec::CAPTURE_AUTO, Quirks{false, true, -1});
  EXPECT_EQ(Replayed(run), 0);
  EXPECT_NE(run.summary.find("reads 1 device values on the host"), std::string::npos) << run.summary;
  const Trained required = Train(TrainSpec::CAPTURE_REQUIRED, Quirks{false, true, -1});
  EXPECT_FALSE(required.status.ok());
  EXPECT_NE(required.status.message().find("CAPTURE_REQUIRED"), std::string::npos) << required.status;
}

TEST_P(StepCaptureTest, AHostValueThatChangesAfterTheRecordingsFailsTheCheck) {
  const Quirks later{false, false, 3};  // the same at steps 1 and 2, not at 3
  const Trained run = Train(TrainSpec::CAPTURE_AUTO, later);
  EXPECT_EQ(Replayed(run), 0);
  EXPECT_NE(run.summary.find("replayed step 3 gave the loss different"), std::string::npos) << run.summary;
  EXPECT_EQ(run.losses, Train(TrainSpec::CAPTURE_OFF, later).losses);
  EXPECT_EQ(run.grads, Train(TrainSpec::CAPTURE_OFF, later).grads);
}

TEST_P(StepCaptureTest, AReleasedBufferStopsReplay) {
  const Trained run = Train(TrainSpec::CAPTURE_AUTO, {}, 10, /*replace_table_after=*/5);
  EXPECT_EQ(Replayed(run), 2);  // steps 4 and 5
  EXPECT_NE(run.summary.find("at step 6, a buffer the captured step reads"), std::string::npos) << run.summary;
  EXPECT_EQ(run.losses, Train(TrainSpec::CAPTURE_OFF, {}, 10, 5).losses);
}

// A pool buffer held past its step (here the checked step's own gradient,
// which the eager run draws from the pool, kept by a holder as an optimizer
// keeping the last gradient would) is one the next replay would overwrite:
// capture turns off instead. (The replayed steps' gradients are the kept
// buffers themselves, overwritten at every replay as a CUDA graph's outputs
// are: a holder of one sees the next step's values.)
TEST_P(StepCaptureTest, ABufferHeldPastItsStepStopsReplay) {
  Var w(Tensor::FromVector({5, 3}, std::vector<float>(15, 0.5f)), true);
  const std::vector<std::pair<std::string, Var>> params = {{"w", w}};
  std::ostringstream progress;
  StepCapture capture(TrainSpec::CAPTURE_AUTO, "", params, progress);
  Tensor held;
  for (int64_t step = 0; step < 8; ++step) {
    w.ZeroGrad();
    const Batch batch = BatchAt(step);
    auto eager = [&]() {
      const Var loss = Mean(Square(Embedding(w, batch.inputs)));
      capture.MarkBackward();
      Backward(loss);
      return EagerStep{loss.value(), 0.0};
    };
    auto done = capture.Run(step, batch, eager);
    ASSERT_TRUE(done.ok()) << done.status();
    if (step == 3) held = w.grad();  // the checked step's gradient, a pool buffer
  }
  EXPECT_EQ(capture.replayed_steps(), 0);
  EXPECT_NE(capture.summary().find("at step 4, 1 buffers of an earlier step are still held"), std::string::npos)
      << capture.summary();
}

TEST_P(StepCaptureTest, AnotherShapeRunsEagerlyForThatStep) {
  const Trained run = Train(TrainSpec::CAPTURE_AUTO, {}, 10, -1, /*short_step=*/6);
  EXPECT_FALSE(run.replayed[6]);
  EXPECT_TRUE(run.replayed[5]);
  EXPECT_TRUE(run.replayed[7]);
  EXPECT_EQ(Replayed(run), 5);
  EXPECT_EQ(run.losses, Train(TrainSpec::CAPTURE_OFF, {}, 10, -1, 6).losses);
  EXPECT_EQ(run.grads, Train(TrainSpec::CAPTURE_OFF, {}, 10, -1, 6).grads);
}

INSTANTIATE_TEST_SUITE_P(HostBackends, StepCaptureTest, ::testing::ValuesIn(HostBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
