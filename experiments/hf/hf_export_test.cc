// The Hugging Face mapping without transformers: which combinations are
// refused (naming the component), the tensor names, the RoPE row permutation
// and the GPT-2 Conv1D layout. tests/hf_interop_test.sh checks the result with
// transformers itself.

#include "experiments/hf/hf_export.h"
#include "experiments/hf/hf_test_models.h"

#include <map>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string Refusal(const std::string& model) {
  auto out = ToHuggingFace(Spec(model), {});
  EXPECT_FALSE(out.ok()) << model;
  return std::string(out.status().message());
}

TEST(HfExport, RefusesWhatHasNoEquivalentNamingTheComponent) {
  EXPECT_NE(Refusal(With(kLlama, "DECODER_ONLY", "ENCODER_DECODER")).find("model.family ENCODER_DECODER"),
            std::string::npos);
  // BERT: what it needs that tvlab's encoder-only model lacks, named.
  const std::string bert = Refusal(With(With(kLlama, "DECODER_ONLY", "ENCODER_ONLY"), "\"pre_ln\"", "\"post_ln\""));
  EXPECT_NE(bert.find("model.family ENCODER_ONLY has no equivalent in Hugging Face BERT"), std::string::npos);
  EXPECT_NE(bert.find("(embeddings.LayerNorm) before the first layer"), std::string::npos) << bert;
  EXPECT_EQ(bert.find("pooler"), std::string::npos) << bert;
  EXPECT_NE(Refusal(With(kLlama, "DECODER_ONLY", "ENCODER_ONLY pooling: FIRST_TOKEN")).find("its pooler"),
            std::string::npos);
  EXPECT_NE(Refusal(With(kLlama, "\"rope\"", "\"alibi\"")).find("model.position.plugin 'alibi'"),
            std::string::npos);
  EXPECT_NE(Refusal(With(kLlama, "\"rmsnorm\"", "\"layernorm\"")).find("model.norm.plugin 'layernorm'"),
            std::string::npos);
  EXPECT_NE(Refusal(With(kLlama, "\"swiglu\"", "\"relu\"")).find("model.ffn.plugin 'relu'"), std::string::npos);
  EXPECT_NE(Refusal(With(kLlama, "\"mha\"", "\"mla\"")).find("model.attention.layout 'mla'"), std::string::npos);
  EXPECT_NE(Refusal(With(kLlama, "\"pre_ln\"", "\"post_ln\"")).find("model.norm.placement 'post_ln'"),
            std::string::npos);
  EXPECT_NE(Refusal(With(kLlama, "\"scaled_dot_product\"", "\"additive\"")).find("model.attention.score 'additive'"),
            std::string::npos);
  EXPECT_NE(Refusal(kLlama + " value_residual { enabled: true }").find("the value residual"),
            std::string::npos);
  EXPECT_NE(Refusal(kLlama + " memory_tokens { count: 2 }").find("memory tokens (model.memory_tokens.count"),
            std::string::npos);
  EXPECT_NE(Refusal(kLlama + " multi_token_prediction { num_tokens: 2 }").find("multi-token prediction heads"),
            std::string::npos);
  // Per-layer patterns: one setting for every layer in Llama's config.
  EXPECT_NE(Refusal(kLlama + " layer_overrides { layers: [0] position { plugin: \"none\" } }")
                .find("Hugging Face export: model.layer_overrides (1) gives some layers other settings"),
            std::string::npos);
  const std::string head = Refusal(With(kLlama, "head_bias: false", "head_bias: true"));
  EXPECT_NE(head.find("model.head_bias"), std::string::npos) << head;
  EXPECT_NE(head.find("head_bias: false"), std::string::npos) << head;  // says how to fix it
}

// Every tensor a 1-layer, 1-head, C = 4, F = 2 decoder-only run has, zeros
// except w_q, whose row r is all r.
std::map<std::string, Tensor> ByName(const HfModel& m) {
  return std::map<std::string, Tensor>(m.tensors.begin(), m.tensors.end());
}

// The window and the attention options (soft-cap, sink, QK-norm, gate) have
// no counterpart in either config: refused, each named.
TEST(HfExport, RefusesTheWindowAndTheAttentionOptions) {
  auto refusal = [](const std::string& set) {
    auto out = ToHuggingFace(Spec(With(kLlama, "\"mha\"", "\"mha\" " + set)), Weights(false));
    EXPECT_FALSE(out.ok()) << set;
    return std::string(out.status().message());
  };
  const std::string window = refusal("window: 4");
  EXPECT_NE(window.find("model.attention.window (4) has no counterpart in Llama's or GPT-2's"),
            std::string::npos) << window;
  for (const char* set : {"logit_softcap: 30", "sink: OFF_BY_ONE", "qk_norm: RMSNORM",
                          "output_gate: HEADWISE"}) {
    const std::string options = refusal(set);
    EXPECT_NE(options.find("model.attention's options (logit_softcap, sink, qk_norm, output_gate) "
                           "has no equivalent in Hugging Face Llama"),
              std::string::npos) << set << ": " << options;
  }
}

// Plain RoPE is all the Llama export writes: partial rotary and scaled
// frequencies are refused (read once the weights are there).
TEST(HfExport, RefusesPartialOrScaledRope) {
  const std::string rope = "position { plugin: \"rope\" }";
  const std::string options = "position { plugin: \"rope\" options { [type.googleapis.com/tvlab.RopeOptions] { ";
  for (const auto& [set, named] : std::vector<std::pair<std::string, std::string>>{
           {"rotary_fraction: 0.5", "partial rotary (rotary_fraction 0.5)"},
           {"scaling { method: YARN }", "scaling.method YARN"}}) {
    auto out = ToHuggingFace(Spec(With(kLlama, rope, options + set + " } } }")), Weights(false));
    ASSERT_FALSE(out.ok()) << set;
    EXPECT_NE(std::string(out.status().message()).find(named), std::string::npos) << out.status();
  }
}

TEST(HfExport, LlamaNamesAndInterleavedRopePermutation) {
  auto out = ToHuggingFace(Spec(kLlama), Weights(false));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->architecture, "LlamaForCausalLM");
  auto t = ByName(*out);
  for (const char* name : {"model.embed_tokens.weight", "model.layers.0.self_attn.k_proj.weight",
                           "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
                           "model.layers.0.mlp.down_proj.weight", "model.layers.0.input_layernorm.weight",
                           "model.layers.0.post_attention_layernorm.weight", "model.norm.weight",
                           "lm_head.weight"})
    EXPECT_EQ(t.count(name), 1u) << name;
  EXPECT_EQ(t.size(), 12u);
  // INTERLEAVED pairs (0,1), (2,3) -> rotate_half halves: rows 0, 2 | 1, 3.
  EXPECT_EQ(t["model.layers.0.self_attn.q_proj.weight"].ToVector(),
            (std::vector<float>{0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, 3, 3}));
  EXPECT_NE(out->config_json.find("\"num_key_value_heads\": 1"), std::string::npos) << out->config_json;
  EXPECT_NE(out->config_json.find("\"tie_word_embeddings\": false"), std::string::npos);
  // HALVES needs no permutation.
  auto halves = ToHuggingFace(
      Spec(With(kLlama, "plugin: \"rope\"",
                "plugin: \"rope\" options { [type.googleapis.com/tvlab.RopeOptions] { pairing: HALVES } }")),
      Weights(false));
  ASSERT_TRUE(halves.ok()) << halves.status();
  EXPECT_EQ(ByName(*halves)["model.layers.0.self_attn.q_proj.weight"].ToVector(),
            (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
}

TEST(HfExport, Gpt2Conv1dLayoutZeroBiasesAndFoldedEmbeddingScale) {
  std::string gpt2 = With(With(With(kLlama, "\"rope\"", "\"learned\""), "plugin: \"rmsnorm\"",
                               "plugin: \"layernorm\" options { [type.googleapis.com/tvlab.LayerNormOptions] "
                               "{ bias: false } }"),
                          "\"swiglu\"", "\"gelu\"");
  gpt2 = With(gpt2, "scale_embeddings: false", "scale_embeddings: true");
  auto out = ToHuggingFace(Spec(gpt2), Weights(true));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->architecture, "GPT2LMHeadModel");
  auto t = ByName(*out);
  // c_attn (C, 3C) = [W_q^T | W_k^T | W_v^T]: row i holds W_q's column i, so
  // the q block of every row is 0, 1, 2, 3.
  const std::vector<float> c_attn = t["transformer.h.0.attn.c_attn.weight"].ToVector();
  ASSERT_EQ(t["transformer.h.0.attn.c_attn.weight"].shape(), (Shape{4, 12}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(c_attn[i * 12 + j], j) << i << "," << j;
  EXPECT_EQ(t["transformer.h.0.mlp.c_fc.weight"].shape(), (Shape{4, 2}));  // (in, out)
  EXPECT_EQ(t["transformer.h.0.attn.c_attn.bias"].ToVector(), std::vector<float>(12, 0.0f));
  EXPECT_EQ(t["transformer.h.0.ln_1.bias"].ToVector(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(t["transformer.wte.weight"].ToVector()[0], 2.0f);  // 1 * sqrt(4)
  EXPECT_NE(out->config_json.find("\"activation_function\": \"gelu\""), std::string::npos);
  EXPECT_NE(out->config_json.find("\"n_positions\": 8"), std::string::npos);
}

TEST(HfExport, ATiedHeadIsWrittenAsTheEmbeddingAndSaysSo) {
  const std::string tied = kLlama + " tie_embeddings: true";
  std::map<std::string, Tensor> weights = Weights(false);
  weights.erase("head.weight");  // a tied run has no head of its own
  auto out = ToHuggingFace(Spec(tied), weights);
  ASSERT_TRUE(out.ok()) << out.status();
  auto t = ByName(*out);
  EXPECT_EQ(t["lm_head.weight"].ToVector(), t["model.embed_tokens.weight"].ToVector());
  EXPECT_NE(out->config_json.find("\"tie_word_embeddings\": true"), std::string::npos) << out->config_json;
  // HF's tied lm_head is the stored embedding: a scaled one cannot tie.
  const std::string scaled = Refusal(With(tied, "scale_embeddings: false", "scale_embeddings: true"));
  EXPECT_NE(scaled.find("model { scale_embeddings: false }"), std::string::npos) << scaled;
}

}  // namespace
}  // namespace tvlab
