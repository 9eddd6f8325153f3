// train.activation_checkpointing BLOCK and SELECTIVE must be invisible in
// results: for every family, with dropout on, the same logits, loss and
// parameter gradients, bit for bit, as NONE; and they must keep less: the
// allocator's high-water mark over a forward and backward pass is lower,
// SELECTIVE's between BLOCK's and NONE's. Models whose blocks cannot be
// rerun alone are refused when built. Plugin kinds' defaults (layouts,
// scores, positions, norms, placements, FFNs, attention options) give the
// same gradients under SELECTIVE too. (The loss and weights over several
// training steps: framework/train/activation_checkpointing_training_test.cc.)

#include <cstring>
#include <fstream>

#include "framework/autograd/ops.h"
#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/tensor/device_memory.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

struct Family {
  const char* name;
  const char* model;  // the model { } body but the shared sizes
  const char* task;
};

const Family kFamilies[] = {
    {"decoder_lm", "family: DECODER_ONLY position { plugin: \"rope\" }",
     "plugin: \"text_lm\" options { [type.googleapis.com/tvlab.TextLmOptions] { path: "
     "\"/usr/share/common-licenses/GPL-3\" context_length: 24 } }"},
    {"encoder_decoder", "family: ENCODER_DECODER position { plugin: \"sinusoidal\" }",
     "plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] { min_length: 3 max_length: 10 } }"},
    {"encoder_classifier", "family: ENCODER_ONLY pooling: MEAN",
     "plugin: \"classify_max\" options { [type.googleapis.com/tvlab.ClassifyMaxOptions] { length: 8 num_digits: 10 } }"},
};

Experiment SpecOf(const Family& f, const std::string& checkpointing, const std::string& extra_model = "") {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + f.name + checkpointing + ".pbtxt";
  std::ofstream(path) << "name: \"c\"\nmodel { " << f.model << " " << extra_model
                      << " d_model: 16 num_layers: 3 num_heads: 4 d_ff: 32 dropout: 0.1 }\ntask { " << f.task
                      << " }\ntrain { steps: 1 activation_checkpointing: " << checkpointing << " }\n"
                      << "eval { examples: 8 }\n";
  auto spec = LoadExperiment(path, {});
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

// One training forward and backward: the logits, the loss, every
// parameter's gradient (model order), and the allocator's high-water mark.
struct Pass {
  Tensor logits, loss;
  std::vector<Tensor> grads;
  int64_t peak_bytes = 0;
};

Pass TrainPass(const Experiment& spec, int64_t rows) {
  auto task = LoadTask(spec);
  EXPECT_TRUE(task.ok()) << task.status();
  auto model = BuildModel(spec, (*task)->vocab_size(), HeadOutputs(**task));
  EXPECT_TRUE(model.ok()) << model.status();
  const Batch batch = (*task)->TrainBatch(spec.seed(), /*index=*/3, rows);
  AllocatorFor(CurrentDevice()).ResetPeak();
  Pass pass;
  {
    Var logits = (*model)->Forward(batch, ForwardContext{/*training=*/true, spec.seed(), /*step=*/3});  // (B, T', V)
    Var loss = CrossEntropy(Reshape(logits, {batch.batch * logits.dim(1), logits.dim(2)}), batch.targets);
    Backward(loss);
    pass.logits = logits.value().Clone();
    pass.loss = loss.value().Clone();
  }
  pass.peak_bytes = AllocatorFor(CurrentDevice()).Stats().peak_in_use_bytes;
  for (const auto& [name, var] : (*model)->NamedParameters()) {
    EXPECT_TRUE(var.grad().defined()) << name;
    pass.grads.push_back(var.grad().defined() ? var.grad().Clone() : Tensor());
  }
  return pass;
}

bool BitIdentical(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  const std::vector<float> x = a.ToVector(), y = b.ToVector();
  return std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

class ActivationCheckpointing : public ::testing::TestWithParam<std::tuple<std::string, int, std::string>> {};

TEST_P(ActivationCheckpointing, GivesBitIdenticalGradientsWithDropout) {
  ScopedBackend backend(std::get<0>(GetParam()));
  const Family& family = kFamilies[std::get<1>(GetParam())];
  const Pass none = TrainPass(SpecOf(family, "NONE"), 8);
  const Pass block = TrainPass(SpecOf(family, std::get<2>(GetParam())), 8);
  EXPECT_TRUE(BitIdentical(none.logits, block.logits)) << family.name;
  EXPECT_TRUE(BitIdentical(none.loss, block.loss)) << family.name;
  ASSERT_EQ(none.grads.size(), block.grads.size());
  for (size_t i = 0; i < none.grads.size(); ++i)
    EXPECT_TRUE(BitIdentical(none.grads[i], block.grads[i])) << family.name << " parameter " << i;
}

INSTANTIATE_TEST_SUITE_P(BackendsAndFamilies, ActivationCheckpointing,
                         ::testing::Combine(::testing::Values("reference", "cpu_onednn"),
                                            ::testing::Values(0, 1, 2),
                                            ::testing::Values("BLOCK", "SELECTIVE")));

// Decoder LMs with one plugin kind (or option) changed from the default:
// the kept products and the rerun of everything else must meet in each
// (linear and recurrent layouts, the unfused score compositions, position
// biases, placements that normalise after the residual, gated FFNs).
const char* const kPluginVariants[] = {
    "attention { layout: \"gqa\" layout_options { [type.googleapis.com/tvlab.GqaOptions] { num_kv_heads: 2 } } }",
    "attention { layout: \"mla\" }",
    "attention { layout: \"differential\" }",
    "attention { layout: \"gla\" } position { plugin: \"none\" }",
    "attention { layout: \"retnet\" } position { plugin: \"none\" }",
    "attention { layout: \"linear_attention\" } position { plugin: \"none\" }",
    "attention { score: \"additive\" }",
    "attention { score: \"dot_product\" qk_norm: RMSNORM output_gate: HEADWISE window: 8 }",
    "position { plugin: \"alibi\" }",
    "position { plugin: \"t5_bias\" }",
    "position { plugin: \"xpos\" }",
    "norm { plugin: \"rmsnorm\" placement: \"post_ln\" } ffn { plugin: \"swiglu\" }",
    "norm { plugin: \"layernorm\" placement: \"deepnorm\" } ffn { plugin: \"geglu\" }",
    "norm { plugin: \"rmsnorm\" placement: \"sandwich_ln\" } ffn { plugin: \"relu2\" }",
    "norm { plugin: \"layernorm\" placement: \"peri_ln\" } tie_embeddings: true",
};

TEST(SelectiveCheckpointing, PluginKindsGiveBitIdenticalGradients) {
  ScopedBackend backend("cpu_onednn");
  const Family lm = {"lm", "family: DECODER_ONLY", kFamilies[0].task};
  for (const char* variant : kPluginVariants) {
    const Pass none = TrainPass(SpecOf(lm, "NONE", variant), 4);
    const Pass selective = TrainPass(SpecOf(lm, "SELECTIVE", variant), 4);
    EXPECT_TRUE(BitIdentical(none.loss, selective.loss)) << variant;
    ASSERT_EQ(none.grads.size(), selective.grads.size()) << variant;
    for (size_t i = 0; i < none.grads.size(); ++i)
      EXPECT_TRUE(BitIdentical(none.grads[i], selective.grads[i])) << variant << " parameter " << i;
  }
}

// The additive score cannot fuse: at T = 160 its composition runs in query
// chunks of 102 rows, each a plain Checkpoint inside the selective block
// (query_chunks.h), whose output alone the block keeps.
TEST(SelectiveCheckpointing, QueryChunkedAttentionGivesBitIdenticalGradients) {
  ScopedBackend backend("cpu_onednn");
  const Family lm = {"chunked", "family: DECODER_ONLY attention { score: \"additive\" }",
                     "plugin: \"text_lm\" options { [type.googleapis.com/tvlab.TextLmOptions] { path: "
                     "\"/usr/share/common-licenses/GPL-3\" context_length: 160 } }"};
  const Pass none = TrainPass(SpecOf(lm, "NONE"), 2);
  const Pass selective = TrainPass(SpecOf(lm, "SELECTIVE"), 2);
  EXPECT_TRUE(BitIdentical(none.loss, selective.loss));
  ASSERT_EQ(none.grads.size(), selective.grads.size());
  for (size_t i = 0; i < none.grads.size(); ++i)
    EXPECT_TRUE(BitIdentical(none.grads[i], selective.grads[i])) << "parameter " << i;
}

TEST(ActivationCheckpointingMemory, BlockKeepsLessThanSelectiveLessThanNone) {
  ScopedBackend backend("reference");
  const Pass none = TrainPass(SpecOf(kFamilies[0], "NONE"), 32);
  const Pass selective = TrainPass(SpecOf(kFamilies[0], "SELECTIVE"), 32);
  const Pass block = TrainPass(SpecOf(kFamilies[0], "BLOCK"), 32);
  EXPECT_LT(block.peak_bytes, selective.peak_bytes);
  EXPECT_LT(selective.peak_bytes, none.peak_bytes);
}

TEST(ActivationCheckpointingRefusals, ModelsWhoseBlocksCannotBeRerunAloneAreRefused) {
  const std::string moe =
      "ffn { plugin: \"moe\" options { [type.googleapis.com/tvlab.MoeFfnOptions] { num_experts: 4 top_k: 2 } } }";
  for (const std::string setting : {"BLOCK", "SELECTIVE"}) {
    for (const std::string& extra : {moe, std::string("value_residual { enabled: true }")}) {
      const Experiment spec = SpecOf(kFamilies[2], setting, extra);
      auto model = BuildModel(spec, 10, 10);
      ASSERT_FALSE(model.ok()) << extra;
      EXPECT_NE(model.status().message().find("train.activation_checkpointing " + setting), std::string::npos)
          << model.status();
      Experiment none = spec;
      none.mutable_train()->set_activation_checkpointing(TrainSpec::NONE);
      EXPECT_TRUE(BuildModel(none, 10, 10).ok()) << extra;
    }
  }
}

}  // namespace
}  // namespace tvlab
