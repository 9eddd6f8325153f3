// T5 bias's own math: the buckets against values worked out by hand from the
// paper's rule (causal and bidirectional), the bias reading its table, one
// table per stack (and per layer when not shared) reached through AtSite,
// and validation.

#include "framework/testing/plugin_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/position/t5_bias/t5_bias.pb.h"

namespace tvlab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<PositionEncoding> Make(const ModelDims& dims, const T5BiasOptions& options = {}) {
  const auto* entry = *PositionEncodingRegistry().Get("t5_bias");
  EXPECT_TRUE(entry->validate(options, dims).ok());
  auto made = entry->create(options, dims);
  InitializeParameters(*made, 3);
  return made;
}

ModelDims EncoderDecoder(int64_t encoder_layers, int64_t decoder_layers) {
  ModelDims dims = SmallDims();  // H = 2
  dims.causal = false, dims.num_layers = encoder_layers, dims.decoder_layers = decoder_layers;
  return dims;
}

// The bucket the bias of (query 0 at `query`, key at `key`) came from,
// found by matching the value against the table's column for head 0.
int64_t BucketOf(const PositionEncoding& table, int64_t query, int64_t key) {
  const std::vector<float> weight = table.NamedParameters().at(0).second.value().ToVector();  // (buckets, H)
  const float v = table.LogitBias(2, query, 1, key + 1).value().data()[key];  // head 0
  for (size_t b = 0; b < weight.size() / 2; ++b)
    if (weight[b * 2] == v) return static_cast<int64_t>(b);
  return -1;
}

TEST(T5Bias, CausalBucketsAreExactThenLogSpaced) {
  ModelDims decoder = SmallDims();
  decoder.causal = true;
  auto t5 = Make(decoder);  // 32 buckets, max distance 128: exact below 16
  const PositionEncoding& table = t5->AtSite({true, 0});
  // distance n = query - key: 0..15 exact; 16 + floor(ln(n/16) / ln(8) * 16).
  std::vector<int64_t> got;
  for (int64_t n : {0, 1, 15, 16, 31, 32, 64, 127, 128, 1000}) got.push_back(BucketOf(table, n + 0, 0));
  EXPECT_THAT(got, ElementsAre(0, 1, 15, 16, 21, 21, 26, 31, 31, 31));
  EXPECT_EQ(BucketOf(table, 0, 5), 0);  // a future key shares distance 0's bucket (and is masked)
}

TEST(T5Bias, BidirectionalBucketsSplitByDirection) {
  auto t5 = Make(EncoderDecoder(1, 1));
  const PositionEncoding& table = t5->AtSite({false, 0});
  // 16 buckets a direction, exact below 8: keys before the query use 0..15,
  // after it 16..31; 8 + floor(ln(n/8) / ln(16) * 8) beyond.
  EXPECT_EQ(BucketOf(table, 3, 3), 0);
  EXPECT_EQ(BucketOf(table, 3, 2), 1);
  EXPECT_EQ(BucketOf(table, 0, 1), 17);
  EXPECT_EQ(BucketOf(table, 16, 0), 10);   // 8 + floor(0.25 * 8)
  EXPECT_EQ(BucketOf(table, 0, 16), 26);   // 16 + 10
  EXPECT_EQ(BucketOf(table, 500, 0), 15);  // past max_distance: the last
}

TEST(T5Bias, EachStackAndLayerHasItsOwnTable) {
  T5BiasOptions per_layer;
  per_layer.set_share_across_layers(false);
  auto t5 = Make(EncoderDecoder(2, 3), per_layer);
  std::vector<std::string> names;
  for (auto& [name, var] : t5->NamedParameters()) {
    names.push_back(name);
    EXPECT_EQ(var.shape(), (Shape{32, 2}));
  }
  EXPECT_THAT(names, ElementsAre("encoder.0.weight", "encoder.1.weight", "decoder.0.weight",
                                 "decoder.1.weight", "decoder.2.weight"));
  EXPECT_NE(&t5->AtSite({false, 1}), &t5->AtSite({false, 0}));
  EXPECT_NE(&t5->AtSite({true, 2}), &t5->AtSite({true, 0}));
  EXPECT_NE(&t5->AtSite({true, 0}), &t5->AtSite({false, 0}));
  // Shared: one table a stack, whatever the layer.
  auto shared = Make(EncoderDecoder(2, 3));
  std::vector<std::string> shared_names;
  for (auto& [name, var] : shared->NamedParameters()) shared_names.push_back(name);
  EXPECT_THAT(shared_names, ElementsAre("encoder.weight", "decoder.weight"));
  EXPECT_EQ(&shared->AtSite({true, 2}), &shared->AtSite({true, 0}));
  // A one-stack model has only its stack's table; the plugin's own bias is it.
  ModelDims decoder = SmallDims();
  decoder.causal = true;
  auto decoder_only = Make(decoder);
  EXPECT_EQ(decoder_only->NamedParameters().size(), 1u);
  EXPECT_EQ(decoder_only->LogitBias(2, 4, 2, 6).value().ToVector(),
            decoder_only->AtSite({true, 0}).LogitBias(2, 4, 2, 6).value().ToVector());
}

TEST(T5Bias, ValidationNamesTheField) {
  const auto* entry = *PositionEncodingRegistry().Get("t5_bias");
  T5BiasOptions odd;
  odd.set_num_buckets(7);
  EXPECT_THAT(std::string(entry->validate(odd, SmallDims()).message()),
              HasSubstr("options.num_buckets must be even and >= 4"));
  T5BiasOptions near;
  near.set_max_distance(16);
  EXPECT_THAT(std::string(entry->validate(near, SmallDims()).message()),
              HasSubstr("options.max_distance (16) must be > options.num_buckets / 2 (16)"));
}

}  // namespace
}  // namespace tvlab
