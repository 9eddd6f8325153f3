#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_LOGIT_TERMS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_LOGIT_TERMS_H_

// Terms of the tiled kernel's score tiles (tiled_attention.cc): the soft-cap
// of a row, and the bucketed relative bias (FusedAttentionDesc::bucket_bias),
// computed once per call as a bias per (head, distance) (DistanceBias:
// (H, T + S - 1), index j - i + T - 1), so a row of a score tile adds one
// contiguous slice of it; the backward adds a row of dS into its buckets of
// a (num_buckets, H) table gradient (one per task, summed in task order).

#include <cmath>
#include <cstdint>
#include <vector>

#include "framework/backend/fused_attention.h"

namespace tvlab {

// row[j] = c * tanh(row[j] / c) for j < n (the soft-cap); with `slope`,
// also slope[j] = 1 - (row[j] / c)^2, the capped logit's derivative.
inline void SoftCapRow(float* row, int64_t n, float c, float* slope) {
  const float inverse = 1.0f / c;
  for (int64_t j = 0; j < n; ++j) {
    const float t = std::tanh(row[j] * inverse);
    row[j] = c * t;
    if (slope != nullptr) slope[j] = 1.0f - (row[j] * inverse) * (row[j] * inverse);
  }
}

// out[i] = the sum over parts p (in order) of parts[p * size + i], i < size.
inline void SumTables(const std::vector<float>& parts, int64_t count, int64_t size, float* out) {
  for (int64_t i = 0; i < size; ++i) out[i] = 0.0f;
  for (int64_t p = 0; p < count; ++p)
    for (int64_t i = 0; i < size; ++i) out[i] += parts[p * size + i];
}

// The bucketed bias of one call.
class TiledDistanceBias {
 public:
  explicit TiledDistanceBias(const FusedAttentionDesc& d)
      : span_(d.distance_span()), queries_(d.queries), heads_(d.heads) {
    if (!d.has_bucket_bias()) return;
    bias_ = d.DistanceBias();
    buckets_ = d.DistanceBuckets();
  }
  bool active() const { return !bias_.empty(); }

  // row[c] += bias of (h, query i, key j0 + c) for c < n.
  void AddToRow(float* row, int64_t n, int64_t h, int64_t i, int64_t j0) const {
    const float* slice = bias_.data() + h * span_ + j0 - i + queries_ - 1;
    for (int64_t c = 0; c < n; ++c) row[c] += slice[c];
  }
  // table[bucket(i, j0 + c) * H + h] += ds[c] for c < n; table (num_buckets, H).
  void AccumulateRow(const float* ds, int64_t n, int64_t h, int64_t i, int64_t j0,
                     float* table) const {
    const int32_t* bucket = buckets_.data() + j0 - i + queries_ - 1;
    for (int64_t c = 0; c < n; ++c) table[bucket[c] * heads_ + h] += ds[c];
  }

 private:
  int64_t span_, queries_, heads_;
  std::vector<float> bias_;       // (H, T + S - 1), empty without a bucket table
  std::vector<int32_t> buckets_;  // (T + S - 1)
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_LOGIT_TERMS_H_
