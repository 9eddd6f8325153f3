// train.activation_checkpointing BLOCK must be invisible in results: for
// every family, with dropout on, the same logits, loss and parameter
// gradients, bit for bit, as NONE; and it must keep less: the allocator's
// high-water mark over a forward and backward pass is lower. Models whose
// blocks cannot be rerun alone are refused when built.

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

class ActivationCheckpointing : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ActivationCheckpointing, BlockGivesBitIdenticalGradientsWithDropout) {
  ScopedBackend backend(std::get<0>(GetParam()));
  const Family& family = kFamilies[std::get<1>(GetParam())];
  const Pass none = TrainPass(SpecOf(family, "NONE"), 8);
  const Pass block = TrainPass(SpecOf(family, "BLOCK"), 8);
  EXPECT_TRUE(BitIdentical(none.logits, block.logits)) << family.name;
  EXPECT_TRUE(BitIdentical(none.loss, block.loss)) << family.name;
  ASSERT_EQ(none.grads.size(), block.grads.size());
  for (size_t i = 0; i < none.grads.size(); ++i)
    EXPECT_TRUE(BitIdentical(none.grads[i], block.grads[i])) << family.name << " parameter " << i;
}

INSTANTIATE_TEST_SUITE_P(BackendsAndFamilies, ActivationCheckpointing,
                         ::testing::Combine(::testing::Values("reference", "cpu_onednn"),
                                            ::testing::Values(0, 1, 2)));

TEST(ActivationCheckpointingMemory, BlockKeepsLessThanNone) {
  ScopedBackend backend("reference");
  const Pass none = TrainPass(SpecOf(kFamilies[0], "NONE"), 32);
  const Pass block = TrainPass(SpecOf(kFamilies[0], "BLOCK"), 32);
  EXPECT_LT(block.peak_bytes, none.peak_bytes);
}

TEST(ActivationCheckpointingRefusals, ModelsWhoseBlocksCannotBeRerunAloneAreRefused) {
  const std::string moe =
      "ffn { plugin: \"moe\" options { [type.googleapis.com/tvlab.MoeFfnOptions] { num_experts: 4 top_k: 2 } } }";
  for (const std::string& extra : {moe, std::string("value_residual { enabled: true }")}) {
    const Experiment spec = SpecOf(kFamilies[2], "BLOCK", extra);
    auto model = BuildModel(spec, 10, 10);
    ASSERT_FALSE(model.ok()) << extra;
    EXPECT_NE(model.status().message().find("train.activation_checkpointing BLOCK"), std::string::npos)
        << model.status();
    Experiment none = spec;
    none.mutable_train()->set_activation_checkpointing(TrainSpec::NONE);
    EXPECT_TRUE(BuildModel(none, 10, 10).ok()) << extra;
  }
}

}  // namespace
}  // namespace tvlab
