// eval.context_lengths and eval.decode_speed_tokens on a tiny trained-from-
// init byte LM: one evaluation per context (the training context's equal to
// the run's own evaluation), a failed evaluation at one of them an error
// naming it (the run fails, writing no metrics.json), and timed greedy
// decoding with the KV cache that feeds exactly the tokens a full forward
// pass would choose.

#include <cmath>
#include <filesystem>
#include <sstream>

#include "framework/autograd/var.h"
#include "framework/backend/backend.h"
#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/context_evals.h"
#include "framework/train/decode_speed.h"
#include "framework/train/evaluate.h"
#include "framework/train/run_experiment.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

Experiment TinyLm(const std::string& position) {
  Experiment spec;
  const std::string text = R"pb(name: "lm"
    model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 dropout: 0 }
    task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] {
      path: "/usr/share/common-licenses/GPL-3" context_length: 16 } } }
    train { steps: 1 }
    eval { examples: 20 context_lengths: [16, 64, 256] decode_speed_tokens: 16 })pb";
  auto parsed = ParseSpecText(text, "tiny.pbtxt");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  auto resolved = ResolveExperiment(*parsed, {"model.position.plugin=" + position}, "tiny.pbtxt", "lm");
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  return *resolved;
}

TEST(ContextEvals, OneEvaluationPerContextTheTrainingOneEqualToTheRunsOwn) {
  const Experiment spec = TinyLm("alibi");
  auto task = LoadTask(spec);
  ASSERT_TRUE(task.ok()) << task.status();
  auto model = BuildModel(spec, (*task)->vocab_size());
  ASSERT_TRUE(model.ok()) << model.status();
  RunMetrics metrics;
  ASSERT_TRUE(Evaluate(**model, **task, spec.eval(), spec.model(), /*full=*/false, &metrics).ok());
  ASSERT_TRUE(EvaluateAtContexts(**model, **task, spec.eval(), spec.model(), &metrics).ok());
  ASSERT_EQ(metrics.context_evals_size(), 3);
  // At the training context: the same 20 windows as the run's evaluation.
  EXPECT_EQ(metrics.context_evals(0).context_length(), 16);
  EXPECT_EQ(metrics.context_evals(0).eval_examples(), 20);
  EXPECT_DOUBLE_EQ(metrics.context_evals(0).eval_loss(), metrics.eval_loss());
  // Longer contexts: as many windows as the held-out tenth holds, at most 20
  // (3515 held-out bytes: 13 windows of 256 + 1 target byte).
  EXPECT_EQ(metrics.context_evals(1).context_length(), 64);
  EXPECT_EQ(metrics.context_evals(1).eval_examples(), 20);
  EXPECT_EQ(metrics.context_evals(2).eval_examples(), 13);
  for (const ContextEval& e : metrics.context_evals()) {
    EXPECT_TRUE(std::isfinite(e.eval_loss()));
    EXPECT_NEAR(e.perplexity(), std::exp(e.eval_loss()), 1e-9 * e.perplexity());
    // An untrained byte model is close to uniform over its vocabulary.
    EXPECT_GT(e.eval_loss(), 4.0);
  }
  // A different context is a different evaluation.
  EXPECT_NE(metrics.context_evals(2).eval_loss(), metrics.context_evals(0).eval_loss());
}

// The language-model task `inner` (text_lm), except that its evaluation at
// `failing` tokens fails, as one whose held-out data became unreadable
// would.
class FailsAtOneLength : public LanguageModelTask {
 public:
  FailsAtOneLength(std::shared_ptr<const Task> inner, int64_t failing)
      : inner_(std::move(inner)), lm_(static_cast<const LanguageModelTask&>(*inner_)), failing_(failing) {}
  absl::StatusOr<std::shared_ptr<const Task>> EvaluatedAt(int64_t length) const override {
    if (length == failing_) return absl::DataLossError("the held-out split cannot be read");
    return lm_.EvaluatedAt(length);
  }
  int64_t vocab_size() const override { return lm_.vocab_size(); }
  int64_t max_length() const override { return lm_.max_length(); }
  int64_t eval_length() const override { return lm_.eval_length(); }
  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    return lm_.TrainBatch(seed, step, batch_size);
  }
  Batch EvalBatch(uint64_t seed, int64_t first, int64_t count) const override {
    return lm_.EvalBatch(seed, first, count);
  }
  int64_t NumEvalExamples(int64_t requested) const override { return lm_.NumEvalExamples(requested); }
  std::vector<int32_t> Tokenize(const std::string& text) const override { return lm_.Tokenize(text); }
  std::string Detokenize(const std::vector<int32_t>& tokens) const override { return lm_.Detokenize(tokens); }
  double UnigramPerplexity() const override { return lm_.UnigramPerplexity(); }
  double EvalTargetBytes(int64_t examples) const override { return lm_.EvalTargetBytes(examples); }

 private:
  std::shared_ptr<const Task> inner_;
  const LanguageModelTask& lm_;
  int64_t failing_;
};

// A failed evaluation used to be recorded as a loss of 0 and the run to end
// well; now the run fails, naming the length, and writes no metrics.json.
TEST(ContextEvals, AFailedEvaluationAtOneLengthFailsTheRunNamingIt) {
  const Experiment spec = TinyLm("alibi");
  auto task = LoadTask(spec);
  ASSERT_TRUE(task.ok()) << task.status();
  const FailsAtOneLength failing(*task, 64);
  auto model = BuildModel(spec, failing.vocab_size());
  ASSERT_TRUE(model.ok()) << model.status();
  RunMetrics metrics;
  absl::Status s = EvaluateAtContexts(**model, failing, spec.eval(), spec.model(), &metrics);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("eval.context_lengths[1] (64)"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("the held-out split cannot be read"), absl::string_view::npos) << s;
  ASSERT_EQ(metrics.context_evals_size(), 1);  // 16 only: nothing recorded for 64 or after
  EXPECT_EQ(metrics.context_evals(0).context_length(), 16);

  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/failing_run";
  std::ostringstream sink;
  auto run = RunExperiment(spec, failing, dir, sink);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("eval.context_lengths[1] (64)"), absl::string_view::npos) << run.status();
  EXPECT_FALSE(std::filesystem::exists(dir + "/metrics.json"));
}

TEST(DecodeSpeed, FeedsTheGreedyTokensOfAFullForwardPass) {
  for (const std::string position : {"rope", "alibi"}) {
    const Experiment spec = TinyLm(position);
    auto task = LoadTask(spec);
    ASSERT_TRUE(task.ok()) << task.status();
    auto model = BuildModel(spec, (*task)->vocab_size());
    ASSERT_TRUE(model.ok()) << model.status();
    const DecodeSpeed speed = MeasureDecodeSpeed(**model, /*first_token=*/'T', /*tokens=*/16, /*repeats=*/2);
    EXPECT_EQ(speed.tokens, 16);
    EXPECT_GT(speed.seconds, 0);
    EXPECT_GT(speed.tokens_per_second(), 0);
    ASSERT_EQ(speed.fed.size(), 16u);
    EXPECT_EQ(speed.fed[0], 'T');
    // Without a cache: every position's most likely next token from one
    // forward pass over the fed tokens is the token fed after it.
    NoGradGuard no_grad;
    Batch all;
    all.batch = 1;
    all.length = 16;
    all.inputs = speed.fed;
    const Var logits = (*model)->Forward(all, ForwardContext{});  // (1, 16, V)
    const int64_t v = logits.dim(2);
    const std::vector<float> host = logits.value().ToVector();
    for (int64_t p = 0; p + 1 < 16; ++p) {
      const float* row = host.data() + p * v;
      const int32_t best = static_cast<int32_t>(std::max_element(row, row + v) - row);
      EXPECT_EQ(best, speed.fed[p + 1]) << position << " position " << p;
    }
  }
}

}  // namespace
}  // namespace tvlab
