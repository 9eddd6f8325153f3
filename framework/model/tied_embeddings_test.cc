// model.tie_embeddings: the head's weight is the embedding table (one
// parameter, counted once, no head.weight), its gradient is the sum of its
// two uses (checked against an untied model holding the same values in
// both places), the encoder-decoder ties its shared table to the head, and
// validation refuses tying where the head does not produce the vocabulary.

#include <fstream>

#include "framework/autograd/ops.h"
#include "framework/data/sequence_pairs.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

constexpr char kReverse[] =
    "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] { min_length: 1 max_length: 6 } } }\n";

absl::StatusOr<Experiment> Spec(const std::string& family, bool tied, const std::string& model_extra = "",
                                const std::string& task = kReverse) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + family + (tied ? "_tied" : "") + ".pbtxt";
  std::ofstream(path) << "name: \"t\"\nmodel { family: " << family
                      << " d_model: 16 num_layers: 1 num_heads: 4 d_ff: 32 dropout: 0 tie_embeddings: "
                      << (tied ? "true " : "false ") << model_extra << " }\n" << task << "train { steps: 1 }\n";
  return LoadExperiment(path, {});
}

std::map<std::string, Var> ByName(const Model& model) {
  std::map<std::string, Var> params;
  for (auto& [name, var] : model.NamedParameters()) params[name] = var;
  return params;
}

Batch Pack(const std::string& family) {
  const std::vector<Example> examples = {{{4, 5, 6, 7}, {7, 6, 5, 4}}, {{5, 6}, {6, 5}}};
  return family == "ENCODER_DECODER" ? PackEncoderDecoder(examples) : PackDecoderOnly(examples);
}

class TiedEmbeddings : public ::testing::TestWithParam<std::string> {};

TEST_P(TiedEmbeddings, OneParameterWhoseGradientSumsBothUses) {
  auto tied_spec = Spec(GetParam(), true), untied_spec = Spec(GetParam(), false);
  ASSERT_TRUE(tied_spec.ok()) << tied_spec.status();
  auto tied = *BuildModel(*tied_spec, 14), untied = *BuildModel(*untied_spec, 14);
  auto t = ByName(*tied), u = ByName(*untied);
  EXPECT_EQ(t.count("head.weight"), 0u);
  EXPECT_EQ(t.count("head.bias"), 1u);
  EXPECT_EQ(untied->NumParameters() - tied->NumParameters(), 14 * 16);
  // The untied model with the tied one's values, its head a copy of the table.
  for (auto& [name, var] : u) {
    const std::string from = name == "head.weight" ? "embedding.weight" : name;
    var.mutable_value() = t.at(from).value().Clone();
  }
  const Batch batch = Pack(GetParam());
  Var tied_logits = tied->Forward(batch, {}), untied_logits = untied->Forward(batch, {});
  EXPECT_EQ(tied_logits.value().ToVector(), untied_logits.value().ToVector());
  Backward(Project(tied_logits));
  Backward(Project(untied_logits));
  const std::vector<float> got = t.at("embedding.weight").grad().ToVector();
  const std::vector<float> as_embedding = u.at("embedding.weight").grad().ToVector();
  const std::vector<float> as_head = u.at("head.weight").grad().ToVector();
  ASSERT_EQ(got.size(), as_head.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], as_embedding[i] + as_head[i], 1e-5) << i;
}

INSTANTIATE_TEST_SUITE_P(Families, TiedEmbeddings, ::testing::Values("DECODER_ONLY", "ENCODER_DECODER"),
                         [](const auto& info) { return info.param; });

TEST(TiedEmbeddingsValidation, APooledClassifierCannotTie) {
  auto spec = Spec("ENCODER_ONLY", true, "pooling: MEAN", "task { plugin: \"classify_max\" }\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("model.tie_embeddings ties the output head to the token embedding, but "
                                         "with model.pooling"),
            std::string::npos)
      << spec.status();
}

}  // namespace
}  // namespace tvlab
