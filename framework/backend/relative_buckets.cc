#include "framework/backend/relative_buckets.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tvlab {

int64_t RelativePositionBucket(int64_t relative, const RelativeBucketRule& rule) {
  int64_t buckets = rule.num_buckets, first = 0, n = std::max<int64_t>(-relative, 0);
  if (!rule.causal) {
    buckets /= 2;
    if (relative > 0) first = buckets;
    n = std::abs(relative);
  }
  const int64_t max_exact = buckets / 2;
  if (n < max_exact) return first + n;
  const int64_t logarithmic =
      max_exact + static_cast<int64_t>(std::log(static_cast<double>(n) / max_exact) /
                                       std::log(static_cast<double>(rule.max_distance) / max_exact) *
                                       static_cast<double>(buckets - max_exact));
  return first + std::min(logarithmic, buckets - 1);
}

}  // namespace tvlab
