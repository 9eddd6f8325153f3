#ifndef TVLAB_FRAMEWORK_BACKEND_RELATIVE_BUCKETS_H_
#define TVLAB_FRAMEWORK_BACKEND_RELATIVE_BUCKETS_H_

// The bucket rule of a bucketed relative position bias (T5; Raffel et al.
// 2020, sec. 2.1, the paper's code's _relative_position_bucket), in one place:
// the t5_bias plugin builds its unfused bias with it and every fused
// attention kernel gets its buckets from it (FusedAttentionDesc::bucket_bias).
//
// `relative` = key position - query position. Causal: n = max(-relative, 0)
// over all num_buckets (keys after the query share bucket 0, and are masked
// anyway). Bidirectional: half the buckets for keys at or before the query,
// half (from num_buckets / 2) for keys after it, n = |relative|. Within a
// half of b buckets, distances n < max_exact = b / 2 get a bucket each;
// larger ones a log-spaced bucket
//   max_exact + floor(ln(n / max_exact) / ln(max_distance / max_exact)
//                     * (b - max_exact)),
// capped at the half's last bucket.
//
// REQUIRES (t5_bias validates them): num_buckets even and >= 4,
// max_distance > num_buckets / 2.

#include <cstdint>

namespace tvlab {

struct RelativeBucketRule {
  bool causal = true;
  int64_t num_buckets = 32;
  int64_t max_distance = 128;
};

// The bucket, in [0, num_buckets), of a key at `relative` from its query.
int64_t RelativePositionBucket(int64_t relative, const RelativeBucketRule& rule);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_RELATIVE_BUCKETS_H_
