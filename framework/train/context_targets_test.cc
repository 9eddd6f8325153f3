// eval.context_targets on a tiny byte LM (text_lm over the GPL's held-out
// tenth): every entry of eval.context_lengths scores the same target tokens
// (the same count, the same ids, at the same stream positions) of the same
// windows; a model that ignores its context gets the same loss at every
// length (and a different one per length without context_targets: the
// confound it removes); a real model's loss at each length equals an
// independent host computation over today's windows of that length that
// end where the longest length's windows end, scoring their last N
// targets; and context_targets 0 records no scored_tokens.

#include <cmath>
#include <memory>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/backend/backend.h"
#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/context_evals.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

constexpr int64_t kLongest = 256;

Experiment TinyLm(const std::string& eval) {
  const std::string text = R"pb(name: "lm"
    model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 dropout: 0 }
    task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] {
      path: "/usr/share/common-licenses/GPL-3" context_length: 16 } } }
    train { steps: 1 })pb";
  auto parsed = ParseSpecText(text + "\neval { " + eval + " }", "tiny.pbtxt");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  auto resolved = ResolveExperiment(*parsed, {"model.position.plugin=alibi"}, "tiny.pbtxt", "lm");
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  return *resolved;
}

const char kSameTargets[] = "examples: 20 batch_size: 7 context_lengths: [16, 64, 256] context_targets: 16";
const char kOwnWindows[] = "examples: 20 batch_size: 7 context_lengths: [16, 64, 256]";

// Logits that ignore the inputs: every position gets the same row, so a
// token's loss depends on its target id only.
class ContextBlind : public Model {
 public:
  explicit ContextBlind(int64_t vocab) : vocab_(vocab) {}
  float Logit(int64_t id) const { return 3.0f * std::sin(0.37f * static_cast<float>(id)); }
  Var Forward(const Batch& b, const ForwardContext&, const AttentionProbe*) const override {
    std::vector<float> logits;  // (B, T, V)
    for (int64_t i = 0; i < b.batch * b.length; ++i)
      for (int64_t v = 0; v < vocab_; ++v) logits.push_back(Logit(v));
    return Var(Tensor::FromVector({b.batch, b.length, vocab_}, logits));
  }
  int64_t KvCacheBytesPerToken(int64_t) const override { return 0; }

 private:
  int64_t vocab_;
};

// The scored (non-ignored) target ids of every row of `b`, row by row.
std::vector<std::vector<int32_t>> ScoredTargets(const Batch& b) {
  std::vector<std::vector<int32_t>> rows(b.batch);
  for (int64_t r = 0; r < b.batch; ++r)
    for (int64_t t = 0; t < b.length; ++t)
      if (b.targets[r * b.length + t] != kIgnoreTarget) rows[r].push_back(b.targets[r * b.length + t]);
  return rows;
}

TEST(ContextTargets, EveryLengthScoresTheSameCountOfTheSameTokens) {
  const Experiment spec = TinyLm(kSameTargets);
  auto task = LoadTask(spec);
  ASSERT_TRUE(task.ok()) << task.status();
  auto longest = (*task)->EvaluatedAt(kLongest);
  ASSERT_TRUE(longest.ok()) << longest.status();
  const int64_t windows = (*longest)->NumEvalExamples(20);  // what the held-out tenth holds at 256
  ASSERT_GT(windows, 0);
  ASSERT_LT(windows, 20);  // fewer than at 16: the count at the longest length is used everywhere
  const Batch whole = (*longest)->EvalBatch(spec.eval().seed(), 0, windows);  // (W, 256)
  std::vector<std::vector<int32_t>> first;
  double unigram = 0, bytes = 0;
  for (int64_t length : {16, 64, 256}) {
    auto view = (*task)->EvaluatedOnSameTargets(EvalWindows{length, kLongest, 16});
    ASSERT_TRUE(view.ok()) << view.status();
    ASSERT_NE(*view, nullptr);
    EXPECT_EQ((*view)->eval_length(), length);
    EXPECT_EQ((*view)->NumEvalExamples(20), windows) << length;
    const Batch b = (*view)->EvalBatch(spec.eval().seed(), 0, windows);  // (W, length)
    ASSERT_EQ(b.length, length);
    for (int64_t r = 0; r < windows; ++r)
      for (int64_t t = 0; t < length; ++t) {
        // The window is the last `length` tokens of the longest window...
        EXPECT_EQ(b.inputs[r * length + t], whole.inputs[r * kLongest + kLongest - length + t]);
        // ... and only its last 16 targets are scored.
        const int32_t target = b.targets[r * length + t];
        if (t < length - 16) {
          EXPECT_EQ(target, kIgnoreTarget);
        } else {
          EXPECT_EQ(target, whole.targets[r * kLongest + kLongest - length + t]);
        }
      }
    const std::vector<std::vector<int32_t>> scored = ScoredTargets(b);
    for (const auto& row : scored) EXPECT_EQ(row.size(), 16u);
    const auto& lm = static_cast<const LanguageModelTask&>(**view);
    if (length == 16) {
      first = scored, unigram = lm.UnigramPerplexity(), bytes = lm.EvalTargetBytes(windows);
      continue;
    }
    EXPECT_EQ(scored, first) << length;
    EXPECT_EQ(lm.UnigramPerplexity(), unigram) << length;  // a function of the scored tokens only
    EXPECT_EQ(lm.EvalTargetBytes(windows), bytes) << length;
  }
  EXPECT_EQ(bytes, static_cast<double>(windows * 16));  // bytes: one per target
  // Without context_targets the lengths score different text.
  auto own16 = (*task)->EvaluatedAt(16);
  ASSERT_TRUE(own16.ok());
  EXPECT_NE(static_cast<const LanguageModelTask&>(**own16).UnigramPerplexity(),
            static_cast<const LanguageModelTask&>(**longest).UnigramPerplexity());
}

TEST(ContextTargets, MetricsReportTheSameWindowsAndScoredTokensAtEveryLength) {
  for (const char* eval : {kSameTargets, kOwnWindows}) {
    const Experiment spec = TinyLm(eval);
    auto task = LoadTask(spec);
    ASSERT_TRUE(task.ok()) << task.status();
    const ContextBlind blind((*task)->vocab_size());
    RunMetrics metrics;
    ASSERT_TRUE(EvaluateAtContexts(blind, **task, spec.eval(), spec.model(), &metrics).ok());
    ASSERT_EQ(metrics.context_evals_size(), 3);
    const ContextEval& at16 = metrics.context_evals(0);
    const ContextEval& at256 = metrics.context_evals(2);
    if (spec.eval().context_targets() == 0) {
      // Today's behaviour: each length its own windows, every target scored,
      // no scored_tokens; a context-blind model's loss differs with the text.
      EXPECT_EQ(at16.eval_examples(), 20);
      EXPECT_LT(at256.eval_examples(), 20);
      for (const ContextEval& e : metrics.context_evals()) EXPECT_FALSE(e.has_scored_tokens());
      EXPECT_GT(std::fabs(at256.eval_loss() - at16.eval_loss()), 1e-3);
      continue;
    }
    const int64_t windows = (*(*task)->EvaluatedAt(kLongest))->NumEvalExamples(20);
    for (const ContextEval& e : metrics.context_evals()) {
      EXPECT_EQ(e.eval_examples(), windows) << e.context_length();
      ASSERT_TRUE(e.has_scored_tokens());
      EXPECT_EQ(e.scored_tokens(), static_cast<double>(windows * 16)) << e.context_length();
      // A loss that depends on the target id only: the same at every length.
      EXPECT_NEAR(e.eval_loss(), at16.eval_loss(), 1e-6 * at16.eval_loss()) << e.context_length();
      EXPECT_NEAR(e.bits_per_byte(), at16.bits_per_byte(), 1e-6 * at16.bits_per_byte());
    }
    // And it is the mean of -log softmax(logits)[id] over those targets.
    const Batch b = (*(*task)->EvaluatedAt(kLongest))->EvalBatch(spec.eval().seed(), 0, windows);
    double log_z = 0;
    for (int64_t v = 0; v < (*task)->vocab_size(); ++v) log_z += std::exp(static_cast<double>(blind.Logit(v)));
    log_z = std::log(log_z);
    double nll = 0;
    for (int64_t r = 0; r < windows; ++r)
      for (int64_t t = kLongest - 16; t < kLongest; ++t) nll += log_z - blind.Logit(b.targets[r * kLongest + t]);
    EXPECT_NEAR(at16.eval_loss(), nll / static_cast<double>(windows * 16), 1e-5);
  }
}

// Today's windows of `length` tokens (EvaluatedAt(length), window j at
// stream position j * length) that end where the windows of kLongest end,
// each scored on its last `targets` targets by a host log-softmax of the
// model's logits: the mean NLL.
double ReferenceLoss(const Model& model, const Task& task, int64_t length, int64_t targets, int64_t windows) {
  auto own = task.EvaluatedAt(length);
  EXPECT_TRUE(own.ok()) << own.status();
  NoGradGuard no_grad;
  double nll = 0;
  for (int64_t i = 0; i < windows; ++i) {
    const int64_t j = (i + 1) * (kLongest / length) - 1;  // ends at (i + 1) * kLongest
    const Batch b = (*own)->EvalBatch(42, j, 1);           // (1, length)
    const std::vector<float> logits = model.Forward(b, ForwardContext{}).value().ToVector();  // (1, T, V)
    const int64_t v = static_cast<int64_t>(logits.size()) / length;
    for (int64_t t = length - targets; t < length; ++t) {
      const float* row = logits.data() + t * v;
      double z = 0;
      for (int64_t k = 0; k < v; ++k) z += std::exp(static_cast<double>(row[k]));
      nll += std::log(z) - row[b.targets[t]];
    }
  }
  return nll / static_cast<double>(windows * targets);
}

TEST(ContextTargets, EachLengthEqualsAnIndependentEvaluationOfItsWindowsLastTargets) {
  const Experiment spec = TinyLm(kSameTargets);
  auto task = LoadTask(spec);
  ASSERT_TRUE(task.ok()) << task.status();
  auto model = BuildModel(spec, (*task)->vocab_size());
  ASSERT_TRUE(model.ok()) << model.status();
  RunMetrics metrics;
  ASSERT_TRUE(EvaluateAtContexts(**model, **task, spec.eval(), spec.model(), &metrics).ok());
  ASSERT_EQ(metrics.context_evals_size(), 3);
  const int64_t windows = metrics.context_evals(0).eval_examples();
  for (const ContextEval& e : metrics.context_evals()) {
    const double reference = ReferenceLoss(**model, **task, e.context_length(), 16, windows);
    EXPECT_NEAR(e.eval_loss(), reference, 1e-5 * reference) << e.context_length();
    EXPECT_NEAR(e.perplexity(), std::exp(e.eval_loss()), 1e-9 * e.perplexity());
  }
  // At the shortest length with N equal to it, that is today's evaluation
  // of the same windows, all targets scored.
  EXPECT_NEAR(metrics.context_evals(0).eval_loss(), ReferenceLoss(**model, **task, 16, 16, windows),
              1e-5 * metrics.context_evals(0).eval_loss());
  // An untrained model sees its context: the lengths differ.
  EXPECT_NE(metrics.context_evals(2).eval_loss(), metrics.context_evals(0).eval_loss());
}

}  // namespace
}  // namespace tvlab
