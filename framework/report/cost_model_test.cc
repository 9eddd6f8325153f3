// The cost model on hand-counted models.

#include "framework/report/cost_model.h"

#include <fstream>

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

}  // namespace
}  // namespace tvlab
