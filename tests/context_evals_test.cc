// eval.context_lengths and eval.decode_speed_tokens on a tiny trained-from-
// init byte LM: one evaluation per context (the training context's equal to
// the run's own evaluation), and timed greedy decoding with the KV cache that
// feeds exactly the tokens a full forward pass would choose.

#include <cmath>

#include "experiments/spec/spec_loader.h"
#include "framework/autograd/var.h"
#include "framework/backend/backend.h"
#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/train/context_evals.h"
#include "framework/train/decode_speed.h"
#include "framework/train/evaluate.h"
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
  Evaluate(**model, **task, spec, /*full=*/false, &metrics);
  ASSERT_TRUE(EvaluateAtContexts(**model, spec, &metrics).ok());
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
