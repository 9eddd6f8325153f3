// model.memory_tokens: N x C parameters per stack; the real tokens' outputs
// equal those of the same model fed the memory vectors as ordinary tokens in
// front (the hand-prepended equivalent: attention positions count them);
// cached decoding equals recomputing the prefix; the memory table's
// gradient passes a finite-difference check; validation names the field.

#include <algorithm>
#include <fstream>

#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/data/sequence_pairs.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

constexpr int64_t kVocab = 14, kMemory = 3;

absl::StatusOr<Experiment> Spec(const std::string& family, const std::string& model_extra) {
  static int made = 0;
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/mt" + std::to_string(made++) + ".pbtxt";
  const bool encoder = family == "ENCODER_ONLY";
  std::ofstream(path) << "name: \"t\"\nmodel { family: " << family
                      << " d_model: 16 num_layers: 2 num_heads: 4 d_ff: 32 dropout: 0 " << model_extra << " }\n"
                      << (encoder ? "task { plugin: \"sort_digits\" options { [type.googleapis.com/tvlab.SortDigitsOptions] "
                                    "{ length: 5 vocab_size: 10 } } }\n"
                                  : "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] "
                                    "{ min_length: 1 max_length: 6 } } }\n")
                      << "train { steps: 1 }\n";
  return LoadExperiment(path, {});
}

std::string Memory(int64_t n) { return "memory_tokens { count: " + std::to_string(n) + " } "; }

TEST(MemoryTokens, NTimesCParametersPerStack) {
  for (const std::string family : {"DECODER_ONLY", "ENCODER_ONLY", "ENCODER_DECODER"}) {
    auto off = Spec(family, ""), on = Spec(family, Memory(kMemory));
    ASSERT_TRUE(on.ok()) << on.status();
    auto plain = *BuildModel(*off, kVocab), memory = *BuildModel(*on, kVocab);
    const int64_t stacks = family == "ENCODER_DECODER" ? 2 : 1;
    EXPECT_EQ(memory->NumParameters() - plain->NumParameters(), stacks * kMemory * 16) << family;
    int64_t tables = 0;
    for (auto& [name, var] : memory->NamedParameters())
      if (name.find("memory_tokens") != std::string::npos) {
        EXPECT_TRUE(name == "decoder_memory_tokens.embedding" || name == "encoder_memory_tokens.embedding") << name;
        EXPECT_EQ(var.shape(), (Shape{kMemory, 16})) << name;
        ++tables;
      }
    EXPECT_EQ(tables, stacks) << family;
  }
}

// The model with memory tokens, and the same weights in a model without them
// whose vocabulary has N more ids, those ids' embeddings the memory vectors:
// fed [m_0 .. m_{N-1}, x], its outputs at x are the first model's. Holds for
// positions that act inside attention only (additive positions would give
// the hand-prepended ids positions too).
void ExpectHandPrependedEquivalent(const std::string& family, const std::string& position) {
  const std::string extra = "scale_embeddings: false position { plugin: \"" + position + "\" } ";
  auto on = Spec(family, extra + Memory(kMemory)), off = Spec(family, extra);
  ASSERT_TRUE(on.ok()) << on.status();
  auto memory = *BuildModel(*on, kVocab), hand = *BuildModel(*off, kVocab + kMemory);
  const std::string stack = family == "ENCODER_ONLY" ? "encoder" : "decoder";
  const Tensor table = [&] {
    for (auto& [name, var] : memory->NamedParameters())
      if (name == stack + "_memory_tokens.embedding") return var.value();
    return Tensor();
  }();
  ASSERT_GT(table.numel(), 0);
  auto own = memory->NamedParameters();
  for (auto& [name, var] : hand->NamedParameters()) {
    const auto at = std::find_if(own.begin(), own.end(), [&](const auto& p) { return p.first == name; });
    ASSERT_NE(at, own.end()) << name;
    std::vector<float> values = at->second.value().ToVector();
    if (name == "embedding.weight" || name == "head.weight" || name == "head.bias") {
      // Rows for the N extra ids: the memory vectors (embedding), zeros (head).
      std::vector<float> more = name == "embedding.weight" ? table.ToVector()
                                                           : std::vector<float>(var.value().numel() - values.size(), 0.0f);
      values.insert(values.end(), more.begin(), more.end());
    }
    ASSERT_EQ(static_cast<int64_t>(values.size()), var.value().numel()) << name;
    var.mutable_value() = Tensor::FromVector(var.shape(), values);
  }
  Batch batch;
  batch.batch = 2, batch.length = 4;
  batch.inputs = {3, 4, 5, 6, 7, 8, 9, 0};
  batch.lengths = {4, 3};
  Batch prepended = batch;
  prepended.length = 4 + kMemory;
  prepended.inputs.clear();
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t i = 0; i < kMemory; ++i) prepended.inputs.push_back(static_cast<int32_t>(kVocab + i));
    prepended.inputs.insert(prepended.inputs.end(), batch.inputs.begin() + r * 4, batch.inputs.begin() + r * 4 + 4);
  }
  prepended.lengths = {4 + kMemory, 3 + kMemory};
  const Var got = memory->Forward(batch, {});                            // (B, T, V)
  const Var want = Slice(Slice(hand->Forward(prepended, {}), 1, kMemory, 4), 2, 0, kVocab);  // (B, T, V)
  ASSERT_EQ(got.shape(), want.shape());
  // Row 1's padding position is not compared (it attends past its length).
  for (int64_t r = 0; r < 2; ++r) {
    const int64_t n = batch.lengths[r];
    EXPECT_LE(MaxAbsDiff(Slice(Slice(got, 0, r, 1), 1, 0, n).value(), Slice(Slice(want, 0, r, 1), 1, 0, n).value()),
              1e-5f)
        << family << " " << position << " row " << r;
  }
}

TEST(MemoryTokens, RealTokensSeeWhatAHandPrependedSequenceGives) {
  for (const std::string position : {"none", "rope", "alibi", "t5_bias"}) {
    ExpectHandPrependedEquivalent("DECODER_ONLY", position);
    ExpectHandPrependedEquivalent("ENCODER_ONLY", position);
  }
}

// Memory tokens change the real tokens' outputs (they are seen).
TEST(MemoryTokens, TheRealTokensSeeThem) {
  auto on = Spec("DECODER_ONLY", Memory(kMemory));
  auto model = *BuildModel(*on, kVocab);
  const Batch batch = PackDecoderOnly({{{4, 5, 6}, {6, 5, 4}}});
  const Tensor before = model->Forward(batch, {}).value();
  for (auto& [name, var] : model->NamedParameters())
    if (name == "decoder_memory_tokens.embedding") var.mutable_value() = RandomTensor(var.shape(), 9);
  EXPECT_GT(MaxAbsDiff(before, model->Forward(batch, {}).value()), 1e-4f);
}

// The first cached step puts the memory tokens into every layer's cache
// (N + t_new entries); later steps attend to them from position N + offset.
TEST(MemoryTokens, KvCacheDecodingEqualsFullRecompute) {
  for (const std::string family : {"DECODER_ONLY", "ENCODER_DECODER"}) {
    for (const std::string position : {"sinusoidal", "rope"}) {
      auto spec = Spec(family, Memory(kMemory) + "position { plugin: \"" + position + "\" }");
      ASSERT_TRUE(spec.ok()) << spec.status();
      auto model = *BuildModel(*spec, kVocab);
      Batch batch;
      batch.batch = 2;
      if (family == "ENCODER_DECODER") {
        batch.source_length = 3;
        batch.source = {4, 5, 2, 6, 7, 8};
        batch.source_lengths = {3, 3};
      }
      DecodeState cached = model->BeginDecoding(batch, true), full = model->BeginDecoding(batch, false);
      const std::vector<std::pair<std::vector<int32_t>, int64_t>> steps = {
          {{4, 5, 6, 7, 8, 9}, 3}, {{10, 11}, 1}, {{12, 3}, 1}};  // (B, t_new) each
      for (const auto& [tokens, t_new] : steps) {
        const Tensor want = model->DecodeStep(&full, tokens, t_new).value();  // (B, t_new, V)
        const Tensor got = model->DecodeStep(&cached, tokens, t_new).value();
        EXPECT_LE(MaxAbsDiff(got, want), 1e-5f) << family << " " << position << " step of " << t_new;
      }
      EXPECT_EQ(cached.self_caches[0].length(), kMemory + 5) << family;
    }
  }
}

TEST(MemoryTokens, GradientOfTheTableMatchesFiniteDifferences) {
  for (const std::string family : {"DECODER_ONLY", "ENCODER_ONLY", "ENCODER_DECODER"}) {
    auto spec = Spec(family, Memory(2) + "norm { plugin: \"layernorm\" } ffn { plugin: \"gelu\" }");
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto model = *BuildModel(*spec, kVocab);
    Batch batch = family == "ENCODER_DECODER" ? PackEncoderDecoder({{{4, 5, 6}, {6, 5, 4}}})
                                              : PackDecoderOnly({{{4, 5, 6}, {6, 5, 4}}});
    std::vector<Var> tables;
    for (auto& [name, var] : model->NamedParameters())
      if (name.find("memory_tokens") != std::string::npos) tables.push_back(var);
    const Tensor g = RandomTensor(model->Forward(batch, {}).shape(), 5);
    auto f = [&](const std::vector<Var>&) { return Sum(Mul(model->Forward(batch, {}), Var(g))); };
    GradCheckResult r = GradCheck(f, tables);
    EXPECT_TRUE(r.ok) << family << ": " << r.message;
  }
}

TEST(MemoryTokens, ValidationNamesTheField) {
  auto spec = Spec("DECODER_ONLY", "memory_tokens { count: -1 }");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("model.memory_tokens.count must be >= 0"), std::string::npos)
      << spec.status();
}

}  // namespace
}  // namespace tvlab
