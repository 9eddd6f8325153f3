// Sizes have upper bounds: every huge value a user could type is a clean
// validation error naming the field (never bad_alloc, OOM or SIGSEGV), and
// every checked-in config still validates.

#include <cmath>
#include <fstream>

#include "framework/data/load_task.h"
#include "framework/limits/memory_estimate.h"
#include "framework/limits/size_limits.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/shipped_configs.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

const char kSpec[] =
    "name: \"tiny\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }\n"
    "task { plugin: \"sort_digits\" }\ntrain { steps: 2 }\neval { examples: 10 }\n";

std::string WriteSpec(const std::string& text) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/spec.pbtxt";
  std::ofstream(path) << text;
  return path;
}

std::string LoadError(const std::vector<std::string>& overrides) {
  auto r = LoadExperiment(WriteSpec(kSpec), overrides);
  EXPECT_FALSE(r.ok()) << testing::PrintToString(overrides);
  return r.ok() ? "" : std::string(r.status().message());
}

TEST(SizeLimits, EveryHugeValueIsAValidationErrorNamingTheField) {
  struct Case {
    std::vector<std::string> overrides;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"model.d_model=1000000000"}, "model.d_model (1000000000) is above 1048576"},
      {{"model.num_layers=1000000"}, "model.num_layers (1000000) is above 10000"},
      {{"task.options.vocab_size=2147483647"}, "task.options.vocab_size (2147483647) is above 16777216"},
      {{"train.batch_size=1000000000"}, "train.batch_size (1000000000) is above"},
      {{"eval.batch_size=1000000000"}, "eval.batch_size (1000000000) is above"},
      {{"eval.examples=1000000000"}, "eval.examples (1000000000) is above 10000000"},
      {{"task.options.length=10000000"}, "the task's sequence length (task sort_digits) = 10000000"},
      {{"model.attention.layout=mla", "model.attention.layout_options.kv_latent_dim=1000000000"},
       "model.attention.layout_options.kv_latent_dim (1000000000) is above 16777216"},
      {{"model.attention.layout=mla", "model.attention.layout_options.kv_latent_dim=10000000"},
       "driven by model.attention.layout_options.kv_latent_dim = 10000000"},
      {{"runtime.threads=100000"}, "runtime.threads (100000) is above"},
      {{"model.d_model=65536", "model.num_layers=1000"}, "more than the"},
  };
  for (const Case& c : cases) {
    std::string m = LoadError(c.overrides);
    EXPECT_THAT(m, HasSubstr(c.expected)) << testing::PrintToString(c.overrides);
  }
}

TEST(SizeLimits, MemoryMessageGivesEstimateDriverAndLimit) {
  std::shared_ptr<const Task> task;
  auto spec = LoadExperiment(WriteSpec(kSpec), {}, &task);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const TaskSizes sizes = SizesOf(*task);
  EXPECT_TRUE(CheckFitsInMemory(*spec, sizes, int64_t{1} << 30).ok());
  absl::Status s = CheckFitsInMemory(*spec, sizes, 1 << 20);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("more than the 1.0 MiB available"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("driven by train.batch_size = 64"));
  Experiment big = *spec;
  big.mutable_model()->set_d_model(8192);
  big.mutable_model()->set_num_layers(200);
  s = CheckFitsInMemory(big, sizes, int64_t{16} << 30);
  EXPECT_THAT(std::string(s.message()), HasSubstr("more than the 16.0 GiB available"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("driven by model.d_model = 8192"));
}

TEST(SizeLimits, ThreadsAreBoundedByTheHardware) {
  auto spec = LoadExperiment(WriteSpec(kSpec), {});
  ASSERT_TRUE(spec.ok());
  spec->mutable_runtime()->set_threads(9);
  EXPECT_THAT(std::string(CheckSizeLimits(*spec, std::nullopt, int64_t{1} << 40, 2).message()),
              HasSubstr("runtime.threads (9) is above 8 (4 x the 2 hardware threads"));
  EXPECT_TRUE(CheckSizeLimits(*spec, std::nullopt, int64_t{1} << 40, 4).ok());
}

// With the fused attention kernel no (T, T) scores exist, so the estimate
// of a long sequence drops its quadratic term; the additive score (not
// fusable) runs in checkpointed query chunks, one chunk's scores at a time;
// runtime.attention "unfused" keeps the whole (T, T) term.
TEST(MemoryEstimate, FusedAttentionHasNoQuadraticScores) {
  auto estimate = [](const std::vector<std::string>& overrides) {
    auto spec = LoadExperiment(WriteSpec(kSpec), overrides);
    EXPECT_TRUE(spec.ok()) << spec.status();
    MemoryEstimate e = EstimateMemory(*spec, {10, 10, 4096});
    std::string parts;
    for (const MemoryPart& p : e.parts) parts += p.what + "\n";
    return std::make_pair(e.total_bytes, parts);
  };
  auto [fused, fused_parts] = estimate({});
  auto [unfused, unfused_parts] = estimate({"runtime.attention=unfused"});
  auto [additive, additive_parts] = estimate({"model.attention.score=additive"});
  auto [additive_whole, additive_whole_parts] =
      estimate({"model.attention.score=additive", "runtime.attention=unfused"});
  EXPECT_THAT(fused_parts, HasSubstr("attention log-sum-exps (B x H x T per sublayer; fused kernel)"));
  EXPECT_THAT(unfused_parts, HasSubstr("attention scores (3 x B x H x T x T per sublayer)"));
  EXPECT_THAT(additive_parts, HasSubstr("attention scores of one query chunk (3 x B x H x rows x T, rows = 8"));
  EXPECT_THAT(additive_parts, HasSubstr("for one query chunk (B x H x rows x T x w)"));
  EXPECT_THAT(additive_whole_parts, HasSubstr("attention scores (3 x B x H x T x T per sublayer)"));
  EXPECT_THAT(additive_whole_parts, HasSubstr("(B x H x T x T x w)"));
  EXPECT_LT(additive, additive_whole / 100);
  // 2 passes x 3 x B 64 x H 2 x 4096^2 x 4 bytes of scores = 48 GiB, less
  // the log-sum-exps that replace them.
  EXPECT_GT(unfused - fused, 47.9 * (1 << 30));
  EXPECT_LT(fused, 2.0 * (1 << 30));
}

// train.activation_checkpointing BLOCK: training holds one block's
// activations at a time plus every block's input, so 8 blocks' activations
// estimate at about an eighth (the logits, after the blocks, stay whole).
TEST(MemoryEstimate, BlockCheckpointingKeepsOneBlocksActivations) {
  auto activations = [](const std::vector<std::string>& overrides) {
    auto spec = LoadExperiment(WriteSpec(kSpec), overrides);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return EstimateMemory(*spec, {10, 10, 512});
  };
  const MemoryEstimate none = activations({"model.num_layers=8", "model.d_model=64"});
  const MemoryEstimate block =
      activations({"model.num_layers=8", "model.d_model=64", "train.activation_checkpointing=BLOCK"});
  EXPECT_EQ(block.static_bytes, none.static_bytes);
  EXPECT_LT(block.activation_bytes, none.activation_bytes / 3);
  std::string parts;
  for (const MemoryPart& p : block.parts) parts += p.what + "\n";
  EXPECT_THAT(parts, HasSubstr("block inputs kept for recomputation"));
}

// train.activation_checkpointing SELECTIVE: each block keeps its products,
// the rest one block at a time: between BLOCK and NONE.
TEST(MemoryEstimate, SelectiveCheckpointingLiesBetweenBlockAndNone) {
  auto activations = [](const std::string& setting) {
    auto spec = LoadExperiment(WriteSpec(kSpec), {"model.num_layers=8", "model.d_model=64",
                                                  "train.activation_checkpointing=" + setting});
    EXPECT_TRUE(spec.ok()) << spec.status();
    return EstimateMemory(*spec, {10, 10, 512});
  };
  const MemoryEstimate none = activations("NONE"), selective = activations("SELECTIVE"),
                       block = activations("BLOCK");
  EXPECT_EQ(selective.static_bytes, none.static_bytes);
  EXPECT_LT(selective.activation_bytes, none.activation_bytes);
  EXPECT_GT(selective.activation_bytes, block.activation_bytes);
  std::string parts;
  for (const MemoryPart& p : selective.parts) parts += p.what + "\n";
  EXPECT_THAT(parts, HasSubstr("the products kept (train.activation_checkpointing SELECTIVE)"));
  EXPECT_THAT(parts, HasSubstr("rerun for one block at a time"));
}

// The output gate's weights count: C x H (headwise) or C x C (elementwise)
// per attention sublayer, plus its bias.
TEST(MemoryEstimate, CountsTheAttentionOutputGate) {
  auto parameters = [](const std::vector<std::string>& overrides) {
    auto spec = LoadExperiment(WriteSpec(kSpec), overrides);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return std::make_pair(EstimateMemory(*spec, {10, 10, 16}).parameters, *spec);
  };
  auto [plain, spec] = parameters({});
  const double headwise = parameters({"model.attention.output_gate=HEADWISE"}).first;
  const double elementwise = parameters({"model.attention.output_gate=ELEMENTWISE"}).first;
  const double c = spec.model().d_model(), h = spec.model().num_heads(),
               sublayers = spec.model().num_layers();  // the spec's family has one per block
  EXPECT_DOUBLE_EQ(headwise - plain, sublayers * (c * h + h));
  EXPECT_DOUBLE_EQ(elementwise - plain, sublayers * (c * c + c));
}

// Per-layer patterns: one layer with the additive score (not fusable) makes
// the attention unfused in the estimate, and its hidden width counts; an
// override's plugin options are held to the caps as the model's are.
TEST(MemoryEstimate, PerLayerPluginsCount) {
  auto estimate = [](const std::vector<std::string>& overrides) {
    auto spec = LoadExperiment(WriteSpec(kSpec), overrides);
    EXPECT_TRUE(spec.ok()) << spec.status();
    std::string parts;
    for (const MemoryPart& p : EstimateMemory(*spec, {10, 10, 4096}).parts) parts += p.what + "\n";
    return parts;
  };
  const std::string one_additive = estimate({"model.num_layers=2", "model.layer_overrides[0].pattern=SA",
                                             "model.layer_overrides[0].letter=A",
                                             "model.layer_overrides[0].attention.score=additive"});
  EXPECT_THAT(one_additive, HasSubstr("attention scores of one query chunk"));
  EXPECT_THAT(one_additive, HasSubstr("for one query chunk (B x H x rows x T x w)"));
  EXPECT_THAT(estimate({}), HasSubstr("fused kernel"));
  EXPECT_THAT(LoadError({"model.layer_overrides[0].pattern=A", "model.layer_overrides[0].letter=A",
                         "model.layer_overrides[0].attention.layout=gqa",
                         "model.layer_overrides[0].attention.layout_options.num_kv_heads=2000000000"}),
              HasSubstr("model.layer_overrides[0].attention.layout_options.num_kv_heads"));
}

// A task's integer options are the task's business: text_lm's context
// length enters through the task's sizes, once, not also as a layer width
// (which made a 32k context look like 32 GiB of activations).
TEST(MemoryEstimate, TaskOptionsAreNotLayerWidths) {
  const std::string spec_text =
      "name: \"lm\"\nmodel { family: DECODER_ONLY d_model: 256 num_layers: 1 num_heads: 8 d_ff: 1024 "
      "position { plugin: \"none\" } }\n"
      "task { plugin: \"text_lm\" options { [type.googleapis.com/tvlab.TextLmOptions] { "
      "path: \"/usr/share/common-licenses/GPL-3\" context_length: 32768 } } }\n"
      "train { steps: 1 batch_size: 1 }\neval { examples: 1 }\n";
  Experiment spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(spec_text, &spec));
  MemoryEstimate e = EstimateMemory(spec, {256, 256, 32768});
  for (const MemoryPart& p : e.parts)
    EXPECT_EQ(p.what.find("task.options"), std::string::npos) << p.what;
  EXPECT_LT(e.total_bytes, 2.0 * (1 << 30));  // linear in T with the fused kernel
}

TEST(MemoryEstimate, MaximalInt32SizesStayFinite) {
  Experiment spec;
  ModelSpec* m = spec.mutable_model();
  m->set_family(ModelSpec::ENCODER_DECODER);
  m->set_d_model(INT32_MAX);
  m->set_d_ff(INT32_MAX);
  m->set_num_layers(INT32_MAX);
  m->set_num_decoder_layers(INT32_MAX);
  m->set_num_heads(INT32_MAX);
  m->set_max_seq_len(INT32_MAX);
  spec.mutable_train()->set_batch_size(INT32_MAX);
  spec.mutable_eval()->set_batch_size(INT32_MAX);
  MemoryEstimate e = EstimateMemory(spec, {INT32_MAX, INT32_MAX, INT32_MAX});
  EXPECT_TRUE(std::isfinite(e.total_bytes));
  EXPECT_GT(e.total_bytes, 1e38);  // no (T, T) term: the defaults fuse attention
}

TEST(MemoryEstimate, ParameterCountIsCloseToTheBuiltModel) {
  const std::string dir = ShippedConfigDir();
  for (const char* name : {"sort_digits.pbtxt", "seq2seq_reverse.pbtxt", "lm_copy.pbtxt", "sort_digits_mla.pbtxt"}) {
    auto spec = LoadExperiment(dir + "/" + name, {});
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    auto loaded = LoadTask(*spec);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    std::shared_ptr<const Task> task = *loaded;
    auto model = BuildModel(*spec, task->vocab_size(), HeadOutputs(*task));
    ASSERT_TRUE(model.ok()) << model.status();
    const double actual = (*model)->NumParameters();
    MemoryEstimate e = EstimateMemory(*spec, {task->vocab_size(), HeadOutputs(*task), task->max_length()});
    EXPECT_GE(e.parameters, 0.9 * actual) << name;
    EXPECT_LE(e.parameters, 1.5 * actual) << name;
    std::cout << name << ": " << actual << " parameters, estimated " << e.parameters << ", peak "
              << HumanBytes(e.total_bytes) << "\n";
  }
}

// model.memory_tokens: N x C parameters per stack, exactly as the built
// model has them.
TEST(MemoryEstimate, CountsMemoryTokens) {
  for (const char* name : {"sort_digits.pbtxt", "seq2seq_reverse.pbtxt"}) {
    auto plain = LoadExperiment(ShippedConfigDir() + "/" + name, {});
    auto memory = LoadExperiment(ShippedConfigDir() + "/" + name, {"model.memory_tokens.count=3"});
    ASSERT_TRUE(memory.ok()) << memory.status();
    auto task = *LoadTask(*memory);
    const TaskSizes sizes{task->vocab_size(), HeadOutputs(*task), task->max_length()};
    auto built_plain = *BuildModel(*plain, task->vocab_size(), HeadOutputs(*task));
    auto built_memory = *BuildModel(*memory, task->vocab_size(), HeadOutputs(*task));
    const double built = built_memory->NumParameters() - built_plain->NumParameters();
    EXPECT_GT(built, 0) << name;
    EXPECT_EQ(EstimateMemory(*memory, sizes).parameters - EstimateMemory(*plain, sizes).parameters, built) << name;
    EXPECT_GT(EstimateMemory(*memory, sizes).activation_bytes, EstimateMemory(*plain, sizes).activation_bytes)
        << name << ": the stacks see N more rows";
  }
}

// model.multi_token_prediction: the extra heads' parameters as the built
// model has them (LINEAR heads; a LAYER head is a block, counted with the
// blocks' per-block estimate), and more activations for their logits.
TEST(MemoryEstimate, CountsMultiTokenPredictionHeads) {
  const std::string config = ShippedConfigDir() + "/lm_copy.pbtxt";
  auto plain = LoadExperiment(config, {});
  for (const char* head : {"LINEAR", "LAYER"}) {
    auto mtp = LoadExperiment(config, {"model.multi_token_prediction.num_tokens=3",
                                       std::string("model.multi_token_prediction.head=") + head});
    ASSERT_TRUE(mtp.ok()) << mtp.status();
    auto task = *LoadTask(*mtp);
    const TaskSizes sizes{task->vocab_size(), HeadOutputs(*task), task->max_length()};
    const double built = (*BuildModel(*mtp, task->vocab_size()))->NumParameters() -
                         (*BuildModel(*plain, task->vocab_size()))->NumParameters();
    const double estimated = EstimateMemory(*mtp, sizes).parameters - EstimateMemory(*plain, sizes).parameters;
    if (std::string(head) == "LINEAR") {
      EXPECT_EQ(estimated, built);
    }
    EXPECT_GE(estimated, 0.9 * built) << head;
    EXPECT_LE(estimated, 1.5 * built) << head;
    EXPECT_GT(EstimateMemory(*mtp, sizes).activation_bytes, EstimateMemory(*plain, sizes).activation_bytes) << head;
  }
}

TEST(SizeLimits, EveryConfigStillValidates) {
  const std::vector<std::string> configs = ShippedConfigs();
  EXPECT_GE(configs.size(), 10u) << ShippedConfigDir();
  for (const std::string& path : configs) {
    std::shared_ptr<const Task> task;
    auto spec = LoadExperiment(path, {}, &task);
    EXPECT_TRUE(spec.ok()) << path << ": " << spec.status();
    if (spec.ok()) {
      EXPECT_TRUE(CheckSizeLimits(*spec, SizesOf(*task)).ok()) << path;
    }
  }
}

}  // namespace
}  // namespace tvlab

namespace tvlab {
namespace {

// The static part is weights, gradients and the optimizer's own state,
// measured from the plugin: AdamW 2 floats per parameter, SGD and Lion 1,
// Muon about 1 (momentum for matrices), Adafactor below AdamW (factored).
TEST(MemoryEstimate, StaticBytesFollowTheOptimizersState) {
  auto static_per_parameter = [](const std::vector<std::string>& overrides) {
    auto spec = LoadExperiment(WriteSpec(kSpec), overrides);
    EXPECT_TRUE(spec.ok()) << spec.status();
    MemoryEstimate e = EstimateMemory(*spec, {10, 10, 16});
    return e.static_bytes / e.parameters / sizeof(float);
  };
  EXPECT_DOUBLE_EQ(static_per_parameter({}), 4.0);  // AdamW: weights, gradients, two moments
  EXPECT_DOUBLE_EQ(static_per_parameter({"train.optimizer.plugin=sgd", "train.optimizer.options.momentum=0.9"}), 3.0);
  EXPECT_DOUBLE_EQ(static_per_parameter({"train.optimizer.plugin=lion"}), 3.0);
  const double muon = static_per_parameter({"train.optimizer.plugin=muon"});
  EXPECT_GT(muon, 3.0);
  EXPECT_LT(muon, 3.2);
  EXPECT_LT(static_per_parameter({"train.optimizer.plugin=adafactor"}), 4.0);
}

}  // namespace
}  // namespace tvlab
