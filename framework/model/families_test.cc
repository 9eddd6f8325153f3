// The decoder-only and encoder-decoder families: padding does not leak
// between rows, incremental decoding with the KV cache equals recomputation,
// and the decoding algorithms agree where they must. Untrained models: these
// are properties of the computation, not of what was learned.

#include <fstream>

#include "framework/autograd/ops.h"
#include "framework/data/sequence_pairs.h"
#include "framework/model/decoding.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

Experiment Spec(const std::string& family, const std::vector<std::string>& overrides = {}) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + family + ".pbtxt";
  std::ofstream(path) << "name: \"f\"\nmodel { family: " << family
                      << " d_model: 16 num_layers: 2 num_heads: 4 d_ff: 32 dropout: 0 }\n"
                         "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] { min_length: 1 max_length: 6 } } }\ntrain { steps: 1 }\n";
  auto spec = LoadExperiment(path, overrides);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

// An untrained model often emits EOS at once; forbid it so generated
// sequences are long enough for the comparisons to mean something.
std::unique_ptr<Model> NoEosModel(const Experiment& spec) {
  auto model = *BuildModel(spec, 14);
  for (auto& [name, var] : model->NamedParameters())
    if (name == "head.bias") var.mutable_value().data()[kEos] = -1e4f;
  return model;
}

std::vector<Example> Examples() {
  return {{{4, 5, 6, 7, 8, 9}, {9, 8, 7, 6, 5, 4}}, {{5, 6}, {6, 5}}, {{7, 8, 9}, {9, 8, 7}}};
}

class Families : public ::testing::TestWithParam<std::string> {
 protected:
  bool encoder_decoder() const { return GetParam() == "ENCODER_DECODER"; }
  Batch Pack(const std::vector<Example>& e) const {
    return encoder_decoder() ? PackEncoderDecoder(e) : PackDecoderOnly(e);
  }
};

TEST_P(Families, APaddedBatchGivesEachSequenceItsOwnResult) {
  Experiment spec = Spec(GetParam());
  auto model = *BuildModel(spec, 14);
  std::vector<Example> all = Examples();
  Batch batch = Pack(all);
  Tensor together = model->Forward(batch, {}).value();  // (3, T, V)
  const int64_t v = together.dim(2);
  for (size_t r = 0; r < all.size(); ++r) {
    Batch alone = Pack({all[r]});
    Tensor single = model->Forward(alone, {}).value();  // (1, T_r, V)
    for (int64_t t = 0; t < alone.length; ++t)
      for (int64_t c = 0; c < v; ++c)
        ASSERT_NEAR(together.data()[(r * batch.length + t) * v + c], single.data()[t * v + c], 1e-5)
            << "row " << r << " position " << t;
  }
}

TEST_P(Families, IncrementalDecodingEqualsTheFullForward) {
  for (const char* position : {"sinusoidal", "rope", "learned"}) {
    Experiment spec = Spec(GetParam(), {std::string("model.position.plugin=") + position});
    auto model = *BuildModel(spec, 14);
    Batch batch = Pack({Examples()[0]});
    Tensor full = model->Forward(batch, {}).value();  // (1, T, V)
    const int64_t v = full.dim(2);
    for (bool cache : {true, false}) {
      NoGradGuard no_grad;
      DecodeState state = model->BeginDecoding(batch, cache);
      // A prefill of 3 tokens, then one token at a time.
      std::vector<int32_t> prefill(batch.inputs.begin(), batch.inputs.begin() + 3);
      std::vector<Tensor> steps = {model->DecodeStep(&state, prefill, 3).value()};
      for (int64_t t = 3; t < batch.length; ++t)
        steps.push_back(model->DecodeStep(&state, {batch.inputs[t]}, 1).value());
      int64_t t = 0;
      for (const Tensor& s : steps)
        for (int64_t i = 0; i < s.dim(1); ++i, ++t)
          for (int64_t c = 0; c < v; ++c)
            ASSERT_NEAR(s.data()[i * v + c], full.data()[t * v + c], 1e-5)
                << position << " cache=" << cache << " position " << t;
      if (cache) {
        EXPECT_GT(state.self_caches[0].length(), 0);
      }
    }
  }
}

// model.attention.window: decoding through caches that keep only the last
// W tokens equals the full windowed forward past T > W, for MHA and GQA with
// rotary and ALiBi positions; no layer's cache ever holds more than W
// tokens, and the model reports that bound.
TEST_P(Families, WindowedIncrementalDecodingEqualsTheWindowedFullForward) {
  const int64_t window = 2;
  for (const char* layout : {"mha", "gqa"})
    for (const char* position : {"rope", "alibi"}) {
      Experiment spec = Spec(GetParam(), {std::string("model.position.plugin=") + position,
                                          std::string("model.attention.layout=") + layout,
                                          "model.attention.window=2"});
      auto model = *BuildModel(spec, 14);
      Batch batch = Pack({Examples()[0]});
      ASSERT_GT(batch.length, 2 * window);
      Tensor full = model->Forward(batch, {}).value();  // (1, T, V)
      const int64_t v = full.dim(2);
      NoGradGuard no_grad;
      DecodeState state = model->BeginDecoding(batch, /*use_cache=*/true);
      std::vector<int32_t> prefill(batch.inputs.begin(), batch.inputs.begin() + 3);
      std::vector<Tensor> steps = {model->DecodeStep(&state, prefill, 3).value()};
      for (int64_t t = 3; t < batch.length; ++t) {
        steps.push_back(model->DecodeStep(&state, {batch.inputs[t]}, 1).value());
        for (const KvCache& cache : state.self_caches) EXPECT_EQ(cache.length(), window);
      }
      int64_t t = 0;
      for (const Tensor& s : steps)
        for (int64_t i = 0; i < s.dim(1); ++i, ++t)
          for (int64_t c = 0; c < v; ++c)
            ASSERT_NEAR(s.data()[i * v + c], full.data()[t * v + c], 1e-5)
                << layout << ", " << position << ", position " << t;
      EXPECT_EQ(model->KvCacheBytesBound(4), window * model->KvCacheBytesPerToken(4));
    }
  // Without a window the cache grows with the sequence: no bound.
  EXPECT_EQ((*BuildModel(Spec(GetParam()), 14))->KvCacheBytesBound(4), 0);
}

TEST_P(Families, WindowedCachedAndUncachedDecodingProduceTheSameTokens) {
  Experiment spec = Spec(GetParam(), {"model.attention.window=2"});
  auto model = NoEosModel(spec);
  for (auto method : {DecodingSpec::GREEDY, DecodingSpec::BEAM}) {
    DecodingSpec d;
    d.set_method(method);
    d.set_max_new_tokens(8);
    for (const Example& e : Examples()) {
      std::vector<int32_t> source, prefix;
      PromptFor(spec.model().family(), e.source, &source, &prefix);
      d.set_use_kv_cache(true);
      auto cached = Generate(*model, source, prefix, d, spec.model().max_seq_len(), 3);
      d.set_use_kv_cache(false);
      auto recomputed = Generate(*model, source, prefix, d, spec.model().max_seq_len(), 3);
      EXPECT_EQ(cached, recomputed) << DecodingSpec::Method_Name(method);
    }
  }
}

TEST_P(Families, CachedAndUncachedDecodingProduceTheSameTokens) {
  Experiment spec = Spec(GetParam());
  auto model = NoEosModel(spec);
  int64_t generated = 0;
  for (auto method : {DecodingSpec::GREEDY, DecodingSpec::BEAM, DecodingSpec::SAMPLE}) {
    DecodingSpec d;
    d.set_method(method);
    d.set_max_new_tokens(8);
    for (const Example& e : Examples()) {
      std::vector<int32_t> source, prefix;
      PromptFor(spec.model().family(), e.source, &source, &prefix);
      d.set_use_kv_cache(true);
      auto cached = Generate(*model, source, prefix, d, spec.model().max_seq_len(), 3);
      d.set_use_kv_cache(false);
      auto recomputed = Generate(*model, source, prefix, d, spec.model().max_seq_len(), 3);
      EXPECT_EQ(cached, recomputed) << DecodingSpec::Method_Name(method);
      EXPECT_LE(static_cast<int64_t>(cached.size()), 8);
      generated += static_cast<int64_t>(cached.size());
    }
  }
  EXPECT_GT(generated, 20) << "the comparison needs real outputs, not immediate EOS";
}

TEST_P(Families, DecodingAlgorithmsAgreeWhereTheyMust) {
  Experiment spec = Spec(GetParam());
  auto model = NoEosModel(spec);
  std::vector<int32_t> source, prefix;
  PromptFor(spec.model().family(), Examples()[2].source, &source, &prefix);
  DecodingSpec greedy;
  greedy.set_max_new_tokens(8);
  auto g = Generate(*model, source, prefix, greedy, 64, 0);
  ASSERT_GE(g.size(), 2u) << "the comparison needs a real output";
  DecodingSpec beam1 = greedy;
  beam1.set_method(DecodingSpec::BEAM);
  beam1.set_beam_size(1);
  beam1.set_length_penalty(0);
  EXPECT_EQ(Generate(*model, source, prefix, beam1, 64, 0), g);  // beam of 1 is greedy
  DecodingSpec top1 = greedy;
  top1.set_method(DecodingSpec::SAMPLE);
  top1.set_top_k(1);
  EXPECT_EQ(Generate(*model, source, prefix, top1, 64, 5), g);  // top-1 sampling is greedy
  DecodingSpec hot = greedy;
  hot.set_method(DecodingSpec::SAMPLE);
  hot.set_temperature(5.0f);
  auto a = Generate(*model, source, prefix, hot, 64, 1), b = Generate(*model, source, prefix, hot, 64, 1);
  EXPECT_EQ(a, b);  // seeded
  bool any_different = false;
  for (uint64_t s = 2; s < 12 && !any_different; ++s)
    any_different = Generate(*model, source, prefix, hot, 64, s) != a;
  EXPECT_TRUE(any_different) << "hot sampling never varied across streams";
  // Generation stops at the model's positions.
  EXPECT_LE(Generate(*model, source, prefix, greedy, static_cast<int64_t>(prefix.size()) + 2, 0).size(), 3u);
}

TEST_P(Families, TheDecoderNeverSeesTheFutureBitForBit) {
  for (const char* position : {"sinusoidal", "rope", "alibi", "learned"}) {
    Experiment spec = Spec(GetParam(), {std::string("model.position.plugin=") + position});
    auto model = *BuildModel(spec, 14);
    Batch batch = Pack({Examples()[0]});
    const Tensor before = model->Forward(batch, {}).value();  // (1, T, V)
    const int64_t v = before.dim(2);
    for (int64_t cut = 1; cut < batch.length; ++cut) {
      Batch changed = batch;
      for (int64_t t = cut; t < batch.length; ++t) changed.inputs[t] = 4 + (changed.inputs[t] + 3) % 10;
      const Tensor after = model->Forward(changed, {}).value();
      for (int64_t i = 0; i < cut * v; ++i)
        ASSERT_EQ(before.data()[i], after.data()[i])
            << position << ": position " << i / v << " saw a change at >= " << cut;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Generative, Families, ::testing::Values("DECODER_ONLY", "ENCODER_DECODER"));

TEST(Classifier, PooledHeadGivesOneRowOfClassLogitsPerSequence) {
  for (const char* pooling : {"MEAN", "FIRST_TOKEN"}) {
    std::string path = std::string(getenv("TEST_TMPDIR")) + "/cls.pbtxt";
    std::ofstream(path) << "name: \"c\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 "
                           "pooling: " << pooling << " }\ntask { plugin: \"classify_max\" }\ntrain { steps: 1 }\n";
    auto spec = LoadExperiment(path, {});
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto model = *BuildModel(*spec, 10, 10);
    Batch b;
    b.batch = 2, b.length = 3, b.inputs = {1, 2, 3, 4, 5, 6}, b.lengths = {3, 2};
    EXPECT_EQ(model->Forward(b, {}).shape(), (Shape{2, 1, 10}));
    // Mean pooling ignores padding: row 1 = its two real tokens alone.
    Batch alone;
    alone.batch = 1, alone.length = 2, alone.inputs = {4, 5};
    Tensor padded = model->Forward(b, {}).value(), single = model->Forward(alone, {}).value();
    for (int c = 0; c < 10; ++c) EXPECT_NEAR(padded.data()[10 + c], single.data()[c], 1e-5) << pooling;
  }
}

TEST(FamilyValidation, TasksMustFitTheFamily) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/bad.pbtxt";
  std::ofstream(path) << "model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }\n"
                         "task { plugin: \"reverse\" }\ntrain { steps: 1 }\n";
  auto spec = LoadExperiment(path, {});
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find(
                "task.plugin: 'reverse' is a sequence pair task and needs a DECODER_ONLY or "
                "ENCODER_DECODER model, but model.family is ENCODER_ONLY"),
            std::string::npos) << spec.status();
  auto cls = LoadExperiment(path, {"task.plugin=classify_max"});
  ASSERT_FALSE(cls.ok());
  EXPECT_NE(cls.status().message().find("set model.pooling to MEAN or FIRST_TOKEN"), std::string::npos)
      << cls.status();
}

TEST(FamilyValidation, ANegativeWindowIsRejectedByName) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/window.pbtxt";
  std::ofstream(path) << "model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }\n"
                         "task { plugin: \"reverse\" }\ntrain { steps: 1 }\n";
  ASSERT_TRUE(LoadExperiment(path, {"model.attention.window=4"}).ok());
  auto bad = LoadExperiment(path, {"model.attention.window=-1"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model.attention.window must be >= 0 (got -1)"),
            std::string::npos) << bad.status();
}

}  // namespace
}  // namespace tvlab
