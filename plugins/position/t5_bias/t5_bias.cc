// T5 relative position bias (Raffel et al. 2020, sec. 2.1): each head adds a
// learned scalar per bucket of query-key distance to its logits,
//   bias[h, i, j] = table[bucket(j - i), h]
// Buckets (the paper's code, _relative_position_bucket; written once in
// framework/backend/relative_buckets.h, which the fused kernels use too): in
// a causal stack n = max(i - j, 0) over num_buckets; in a bidirectional one
// half the buckets are for keys after the query and n = |i - j|. Distances
// n < max_exact = buckets / 2 get a bucket each; larger ones a log-spaced
// bucket, capped at the last. Query positions start at the KV cache's
// offset, so decoding with a cache sees the same bias as recomputation.
//
// Tables: the encoder stack (bidirectional buckets) and the decoder stack
// (causal buckets) have their own, named position.encoder and
// position.decoder; with share_across_layers false each layer has one
// (position.decoder.0, .1, ...). The stacks reach their table through
// PositionEncoding::AtSite (BlockStack asks per layer). LogitBias on the
// plugin itself is that of the model's first stack, layer 0.
// Fusable: the fused kernels take the table and its rule
// (FusedAttentionDesc::bucket_bias) and give the table's gradient.
// Tables start N(0, d_model^-1/2), as Hugging Face's T5 initialisation.
//
// Example config (configs/sort_digits_t5_bias.pbtxt):
//   position { plugin: "t5_bias" }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/backend/relative_buckets.h"
#include "framework/core/check.h"
#include "framework/interfaces/position_encoding.h"
#include "plugins/position/t5_bias/t5_bias.pb.h"

namespace tvlab {
namespace {

// One table (num_buckets, H) and its bucket rule.
class T5BiasTable : public PositionEncoding {
 public:
  T5BiasTable(const T5BiasOptions& options, const ModelDims& dims, bool causal)
      : heads_(dims.num_heads) {
    rule_.causal = causal;
    rule_.num_buckets = options.num_buckets();
    rule_.max_distance = options.max_distance();
    table_ = AddParameter("weight", {rule_.num_buckets, heads_},
                          Init::Normal(1.0f / std::sqrt(static_cast<float>(dims.d_model))));
  }
  // -> (1, H, T, S) for queries at [q_offset, q_offset + T) and keys at [0, S).
  Var LogitBias(int64_t num_heads, int64_t q_offset, int64_t t, int64_t s) const override {
    TVLAB_CHECK_EQ(num_heads, heads_) << "t5_bias table built for another head count";
    std::vector<int32_t> ids(t * s);  // (T, S)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j)
        ids[i * s + j] = static_cast<int32_t>(RelativePositionBucket(j - (q_offset + i), rule_));
    Var bias = Reshape(Embedding(table_, ids), {1, t, s, heads_});  // (1, T, S, H)
    return Permute(bias, {0, 3, 1, 2});                             // (1, H, T, S)
  }
  // The fused kernels compute the same bias from the table and the rule.
  FusedLogitBias FusedLogitBiasFor(int64_t num_heads) const override {
    TVLAB_CHECK_EQ(num_heads, heads_) << "t5_bias table built for another head count";
    FusedLogitBias fused;
    fused.fusable = true;
    fused.bucket_table = table_;
    fused.bucket_rule = rule_;
    return fused;
  }

 private:
  RelativeBucketRule rule_;
  int64_t heads_;
  Var table_;  // (num_buckets, H)
};

class T5Bias : public PositionEncoding {
 public:
  static constexpr uint32_t kCapabilities = kAddsLogitBias | kBiasPerModelHead | kFusablePosition;
  static absl::Status Validate(const T5BiasOptions& options, const ModelDims&) {
    if (options.num_buckets() < 4 || options.num_buckets() % 2 != 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "options.num_buckets must be even and >= 4, as a bidirectional stack halves it and each "
          "half keeps exact and log-spaced buckets (got ", options.num_buckets(), "), e.g. 32"));
    if (options.max_distance() <= options.num_buckets() / 2)
      return absl::InvalidArgumentError(absl::StrCat(
          "options.max_distance (", options.max_distance(),
          ") must be > options.num_buckets / 2 (", options.num_buckets() / 2,
          "), the last exact distance of a causal stack; e.g. 128 with 32 buckets"));
    return absl::OkStatus();
  }
  static std::unique_ptr<PositionEncoding> Create(const T5BiasOptions& options, const ModelDims& dims) {
    return std::make_unique<T5Bias>(options, dims);
  }

  // The stacks of the model `dims` describes: the encoder (bidirectional)
  // of ENCODER_ONLY and ENCODER_DECODER, the decoder (causal) of
  // DECODER_ONLY and ENCODER_DECODER.
  T5Bias(const T5BiasOptions& options, const ModelDims& dims) {
    const bool has_encoder = !dims.causal, has_decoder = dims.causal || dims.decoder_layers > 0;
    const int64_t decoder_layers = dims.causal ? dims.num_layers : dims.decoder_layers;
    if (has_encoder) encoder_ = AddTables("encoder", options, dims, false, dims.num_layers);
    if (has_decoder) decoder_ = AddTables("decoder", options, dims, true, decoder_layers);
    first_ = has_encoder ? encoder_.front() : decoder_.front();
  }

  const PositionEncoding& AtSite(const Site& site) const override {
    const std::vector<const T5BiasTable*>& tables = site.causal ? decoder_ : encoder_;
    TVLAB_CHECK(!tables.empty()) << "t5_bias has no " << (site.causal ? "decoder" : "encoder")
                                 << " table: the model was built for other stacks";
    const size_t index = tables.size() == 1 ? 0 : static_cast<size_t>(site.layer);
    TVLAB_CHECK(index < tables.size()) << "t5_bias has no table for layer " << site.layer;
    return *tables[index];
  }

  Var LogitBias(int64_t num_heads, int64_t q_offset, int64_t t, int64_t s) const override {
    return first_->LogitBias(num_heads, q_offset, t, s);  // (1, H, T, S)
  }
  FusedLogitBias FusedLogitBiasFor(int64_t num_heads) const override {
    return first_->FusedLogitBiasFor(num_heads);
  }

 private:
  // One shared table named `stack`, or one per layer under it.
  std::vector<const T5BiasTable*> AddTables(const std::string& stack, const T5BiasOptions& options,
                                            const ModelDims& dims, bool causal, int64_t layers) {
    if (options.share_across_layers())
      return {AddChild(stack, std::make_unique<T5BiasTable>(options, dims, causal))};
    auto* list = AddChild(stack, std::make_unique<ModuleList>());
    std::vector<const T5BiasTable*> tables;
    for (int64_t l = 0; l < layers; ++l)
      tables.push_back(list->Append(std::make_unique<T5BiasTable>(options, dims, causal)));
    return tables;
  }

  std::vector<const T5BiasTable*> encoder_, decoder_;
  const T5BiasTable* first_ = nullptr;
};

TVLAB_REGISTER_POSITION_ENCODING("t5_bias", T5Bias, T5BiasOptions);

}  // namespace
}  // namespace tvlab
