#include "framework/backend/fused_attention.h"

namespace tvlab {

std::vector<int32_t> FusedAttentionDesc::DistanceBuckets() const {
  std::vector<int32_t> buckets(static_cast<size_t>(distance_span()));
  for (int64_t index = 0; index < distance_span(); ++index) {
    // index = j - i + T - 1: key j at query position query_offset + i.
    const int64_t relative = index - (queries - 1) - bucket_bias.query_offset;
    buckets[index] = static_cast<int32_t>(RelativePositionBucket(relative, bucket_bias.rule));
  }
  return buckets;
}

std::vector<float> FusedAttentionDesc::DistanceBias() const {
  TVLAB_CHECK(has_bucket_bias()) << "DistanceBias without a bucket table";
  const std::vector<int32_t> buckets = DistanceBuckets();
  const int64_t span = distance_span();
  std::vector<float> bias(static_cast<size_t>(heads * span));  // (H, T + S - 1)
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t index = 0; index < span; ++index)
      bias[h * span + index] = bucket_bias.table[buckets[index] * heads + h];
  return bias;
}

}  // namespace tvlab
