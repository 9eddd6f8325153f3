#ifndef TVLAB_EXPERIMENTS_HF_HF_TEST_MODELS_H_
#define TVLAB_EXPERIMENTS_HF_HF_TEST_MODELS_H_

// Tiny Llama- and GPT-2-shaped specs and weights for the HF export and
// import tests (test-only).

#include <map>
#include <string>

#include "framework/schema/experiment.pb.h"
#include "framework/tensor/tensor.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tvlab {

inline Experiment Spec(const std::string& model) {
  Experiment spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString("model { " + model + " }", &spec)) << model;
  return spec;
}

inline const std::string kLlama =
    "family: DECODER_ONLY d_model: 4 num_layers: 1 num_heads: 1 max_seq_len: 8 bias: false "
    "head_bias: false scale_embeddings: false "
    "attention { score: \"scaled_dot_product\" layout: \"mha\" } position { plugin: \"rope\" } "
    "norm { plugin: \"rmsnorm\" placement: \"pre_ln\" } ffn { plugin: \"swiglu\" }";

inline std::string With(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

inline std::map<std::string, Tensor> Weights(bool gpt2) {
  std::map<std::string, Tensor> w;
  const std::string l = "decoder.layers.0.";
  w["embedding.weight"] = Tensor::Full({5, 4}, 1.0f);
  w["head.weight"] = Tensor::Zeros({5, 4});
  w[l + "attention.w_q.weight"] = Tensor::FromVector({4, 4}, {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  for (const char* p : {"w_k", "w_v", "w_o"}) w[l + "attention." + p + ".weight"] = Tensor::Zeros({4, 4});
  w[l + "ffn.w_1.weight"] = Tensor::Zeros({2, 4});
  w[l + "ffn.w_2.weight"] = Tensor::Zeros({4, 2});
  if (!gpt2) w[l + "ffn.w_3.weight"] = Tensor::Zeros({2, 4});
  for (const std::string& n : {l + "attention_residual.norm", l + "ffn_residual.norm", std::string("decoder.final_norm")})
    w[n + ".weight"] = Tensor::Full({4}, 1.0f);
  if (gpt2) w["position.weight"] = Tensor::Zeros({8, 4});
  return w;
}

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_HF_HF_TEST_MODELS_H_
