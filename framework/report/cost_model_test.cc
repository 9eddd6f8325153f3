// The cost model on hand-counted models.

#include "framework/report/cost_model.h"

#include <fstream>

#include "framework/data/load_task.h"
#include "framework/spec/spec_loader.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(CostModel, SixFlopsPerDenseParameterPlusAttention) {
  CostModelInputs in;
  in.parameters = {{"embedding.weight", 1000}, {"position.weight", 64}, {"encoder.w", 500}, {"head.weight", 100}};
  in.num_layers = 2;
  in.seq_len = 8;
  in.attention_width = 16;
  in.kv_cache_bytes_per_token = 256;
  CostEstimate c = EstimateTrainingCost(in);
  EXPECT_EQ(c.parameters, 1664);
  EXPECT_EQ(c.lookup_parameters, 1064);
  EXPECT_EQ(c.dense_parameters, 600);
  EXPECT_DOUBLE_EQ(c.dense_flops_per_token, 3600);
  EXPECT_DOUBLE_EQ(c.attention_flops_per_token, 12.0 * 2 * 8 * 16);
  EXPECT_DOUBLE_EQ(c.train_flops_per_token, 3600 + 3072);
  EXPECT_EQ(c.kv_cache_bytes_per_token, 256);
  // Causal attention sees (T + 1) / 2 keys on average.
  in.causal = true;
  EXPECT_DOUBLE_EQ(EstimateTrainingCost(in).attention_flops_per_token, 12.0 * 2 * 4.5 * 16);
}

// Memory tokens: M = 2 more positions computed per sequence of T = 8 (a
// trained token pays 10 / 8 of a position) and 2 more keys per query; their
// table is a lookup. Reused parameters (the unembedding of MTP layer heads)
// cost 6 FLOPs per extra use.
TEST(CostModel, MemoryTokensAndReusedParameters) {
  CostModelInputs in;
  in.parameters = {{"embedding.weight", 1000}, {"decoder_memory_tokens.embedding", 32},
                   {"decoder.w", 500}, {"head.weight", 100}};
  in.num_layers = 2;
  in.seq_len = 8;
  in.attention_width = 16;
  in.causal = true;
  in.memory_tokens = 2;
  in.reused_parameters = 100;
  CostEstimate c = EstimateTrainingCost(in);
  EXPECT_EQ(c.lookup_parameters, 1032);
  EXPECT_EQ(c.dense_parameters, 600);
  EXPECT_DOUBLE_EQ(c.dense_flops_per_token, 6.0 * 700 * 10 / 8);
  EXPECT_DOUBLE_EQ(c.attention_flops_per_token, 12.0 * 2 * (4.5 + 2) * 16 * 10 / 8);
}

// A window W: causal query p sees min(p + 1, W) keys, a bidirectional one
// the keys within W - 1 positions (T 4, W 2: 1, 2, 2, 2 and 2, 3, 3, 2).
// A mixture of experts: the parameters of unchosen experts cost no FLOPs.
TEST(CostModel, InactiveParametersAreLeftOutOfTheFlops) {
  CostModelInputs in;
  in.parameters = {{"embedding.weight", 100}, {"ffn.router.weight", 40}, {"ffn.experts", 800}};
  in.inactive_parameters = 600;  // top-2 of 8 experts of 100
  CostEstimate c = EstimateTrainingCost(in);
  EXPECT_EQ(c.parameters, 940);
  EXPECT_EQ(c.dense_parameters, 840);
  EXPECT_EQ(c.active_parameters, 340);
  EXPECT_DOUBLE_EQ(c.dense_flops_per_token, 6.0 * 240);
}

TEST(CostModel, AWindowCountsOnlyTheKeysInsideIt) {
  CostModelInputs in;
  in.num_layers = 1;
  in.seq_len = 4;
  in.attention_width = 1;
  in.window = 2;
  in.causal = true;
  EXPECT_DOUBLE_EQ(EstimateTrainingCost(in).attention_flops_per_token, 12.0 * 7 / 4);
  in.causal = false;
  EXPECT_DOUBLE_EQ(EstimateTrainingCost(in).attention_flops_per_token, 12.0 * 10 / 4);
  in.window = 8;  // wider than T: every key, as without a window
  EXPECT_DOUBLE_EQ(EstimateTrainingCost(in).attention_flops_per_token, 12.0 * 4);
}

TEST(CostModel, LookupTablesAreTokenAndPositionTables) {
  EXPECT_TRUE(IsLookupParameter("embedding.weight"));
  EXPECT_TRUE(IsLookupParameter("position.weight"));
  EXPECT_FALSE(IsLookupParameter("head.weight"));
  EXPECT_FALSE(IsLookupParameter("encoder.layers.0.attention.w_q.weight"));
}

TEST(CostModel, HandCountedEncoder) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/tiny.pbtxt";
  std::ofstream(path) << R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2
            position { plugin: "sinusoidal" } norm { placement: "pre_ln" } }
    task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 8 vocab_size: 10 } } }
    train { steps: 1 })pb";
  auto spec = LoadExperiment(path, {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto cost = CostOfExperiment(*spec);
  ASSERT_TRUE(cost.ok()) << cost.status();
  // Token table 10 x 16 (sinusoidal positions have no parameters).
  EXPECT_EQ(cost->lookup_parameters, 160);
  // Q, K, V, O: 4 x (16 x 16 + 16); ReLU FFN with d_ff = 4 x 16: 16 x 64 + 64 + 64 x 16 + 16;
  // pre-LN: two LayerNorms per block and a final one, 2 x 16 each; head 16 x 10 + 10.
  const int64_t dense = 4 * (16 * 16 + 16) + (16 * 64 + 64 + 64 * 16 + 16) + 3 * 32 + (16 * 10 + 10);
  EXPECT_EQ(cost->dense_parameters, dense);
  EXPECT_EQ(cost->parameters, dense + 160);
  EXPECT_DOUBLE_EQ(cost->train_flops_per_token, 6.0 * dense + 12.0 * 1 * 8 * 16);
  // MHA caches K and V: 2 x 16 floats per token per layer.
  EXPECT_EQ(cost->kv_cache_bytes_per_token, 2 * 16 * 4);
}

TEST(CostModel, EncoderDecoderCountsCrossAttentionAndClassifiersTheirHead) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/ed.pbtxt";
  std::ofstream(path) << R"pb(name: "ed"
    model { family: ENCODER_DECODER d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "reverse" options { [type.googleapis.com/tvlab.ReverseOptions] { max_length: 5 } } }
    train { steps: 1 })pb";
  auto spec = LoadExperiment(path, {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto cost = CostOfExperiment(*spec);
  ASSERT_TRUE(cost.ok()) << cost.status();
  // One encoder layer, one decoder layer (self + cross): 3 attention sublayers
  // at the task's longest row (6 = 5 digits + EOS).
  EXPECT_DOUBLE_EQ(cost->attention_flops_per_token, 12.0 * 3 * 6 * 16);

  std::string cls = std::string(getenv("TEST_TMPDIR")) + "/cls.pbtxt";
  std::ofstream(cls) << R"pb(name: "cls"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 pooling: MEAN }
    task { plugin: "classify_max" options { [type.googleapis.com/tvlab.ClassifyMaxOptions] { length: 8 num_digits: 4 } } }
    train { steps: 1 })pb";
  auto cls_spec = LoadExperiment(cls, {});
  ASSERT_TRUE(cls_spec.ok()) << cls_spec.status();
  auto cls_cost = CostOfExperiment(*cls_spec);
  ASSERT_TRUE(cls_cost.ok()) << cls_cost.status();
  EXPECT_EQ(cls_cost->lookup_parameters, 4 * 16);  // 4 digit tokens
  // The head maps to the task's 4 classes.
  const int64_t dense = 4 * (16 * 16 + 16) + (16 * 64 + 64 + 64 * 16 + 16) + 3 * 32 + (16 * 4 + 4);
  EXPECT_EQ(cls_cost->dense_parameters, dense);
}

// A decoder-only model on 40-byte windows of text (T = 40), d_model 32, two
// heads of 16, `layers` layers, with `model_extra` in its model message.
absl::StatusOr<Experiment> TextModel(const std::string& name, int layers, const std::string& model_extra) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + name + ".pbtxt";
  std::ofstream(path) << "name: \"" << name << "\" model { family: DECODER_ONLY d_model: 32 num_heads: 2 d_ff: 64 "
                      << "num_layers: " << layers << " " << model_extra << " }\n"
                      << R"pb(task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] {
                                path: "/usr/share/common-licenses/GPL-3" context_length: 40 } } }
                              train { steps: 1 } eval { examples: 8 })pb";
  return LoadExperiment(path, {});
}

// GLA's chunked form (chunk_size 16) per position of a 40-token sequence,
// one layer of two heads of dk = dv = 16: chunks of 16, 16 and 8 tokens;
// the first reads no state.
double GlaForwardFlopsAt40() {
  const double first = 2.0 * 16 * 16 * 16    // Q K^T (16, 16)
                       + 2.0 * 16 * 16 * 16  // (16, 16) x V
                       + 2.0 * 16 * 16 * 16;  // K^T V: the state's update
  const double second = first + 2.0 * 16 * 16 * 16;  // + Q S, the state's read
  const double last = 2.0 * 8 * 8 * 16 + 2.0 * 8 * 8 * 16 + 2.0 * 8 * 16 * 16 + 2.0 * 8 * 16 * 16;
  return 2 * (first + second + last) / 40;
}

TEST(CostModel, RecurrentMixersCountTheirChunkedFormNotSoftmax) {
  auto spec = TextModel("gla", 2, R"pb(attention { layout: "gla" } position { plugin: "none" })pb");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto task = LoadTask(*spec);
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_EQ((*task)->max_length(), 40);
  auto cost = CostOfExperiment(*spec);
  ASSERT_TRUE(cost.ok()) << cost.status();
  // Two layers, forward + backward = 3 x forward; softmax would have been
  // 12 * 2 * 20.5 * 32 = 15744.
  EXPECT_DOUBLE_EQ(cost->attention_flops_per_token, 2 * 3 * GlaForwardFlopsAt40());
  EXPECT_DOUBLE_EQ(cost->train_flops_per_token, 6.0 * cost->dense_parameters + 2 * 3 * GlaForwardFlopsAt40());
  EXPECT_EQ(cost->kv_cache_bytes_per_token, 0);
}

TEST(CostModel, EachLayerCountsItsOwnLayoutAndWindow) {
  // Hybrid "LS": GLA in layers 0 and 2, softmax (MHA, causal: 20.5 keys on
  // average, d_attn 32) in layers 1 and 3.
  auto hybrid = TextModel("hybrid", 4, R"pb(position { plugin: "rope" }
      layer_overrides { pattern: "LS" letter: "L" attention { layout: "gla" } position { plugin: "none" } })pb");
  ASSERT_TRUE(hybrid.ok()) << hybrid.status();
  auto cost = CostOfExperiment(*hybrid);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_DOUBLE_EQ(cost->attention_flops_per_token, 2 * 3 * GlaForwardFlopsAt40() + 12.0 * 2 * (41.0 / 2) * 32);

  // Local and global (Gemma-style): layer 0 sees the 4 latest keys (1, 2, 3,
  // then 4 for the other 37 queries), layer 1 all earlier ones.
  auto windows = TextModel("windows", 2, R"pb(layer_overrides { layers: [0] attention { window: 4 } })pb");
  ASSERT_TRUE(windows.ok()) << windows.status();
  auto windowed = CostOfExperiment(*windows);
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  const double local = (1.0 + 2 + 3 + 4 * 37) / 40, global = 41.0 / 2;
  EXPECT_DOUBLE_EQ(windowed->attention_flops_per_token, 12.0 * (local + global) * 32);
}

TEST(CostModel, SublayersAddUpAndAlikeOnesMatchTheUniformFields) {
  CostModelInputs in;
  in.seq_len = 8;
  in.num_layers = 3;
  in.attention_width = 16;
  in.causal = true;
  const double uniform = EstimateTrainingCost(in).attention_flops_per_token;
  in.sublayers.assign(3, SublayerMixing{16, true, 0, std::nullopt});
  EXPECT_EQ(EstimateTrainingCost(in).attention_flops_per_token, uniform);  // bit-identical
  in.sublayers[1].mixer_flops = 100.0;
  in.sublayers[2].window = 2;
  EXPECT_DOUBLE_EQ(EstimateTrainingCost(in).attention_flops_per_token,
                   12.0 * 4.5 * 16 + 3 * 100.0 + 12.0 * (1.0 + 2 * 7) / 8 * 16);
}

}  // namespace
}  // namespace tvlab
