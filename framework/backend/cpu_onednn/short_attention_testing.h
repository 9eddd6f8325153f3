#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_TESTING_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_TESTING_H_

// What the short attention kernels' tests share (short_attention_avx512_test,
// short_attention_heads_test): a call's description, and the
// agreement two kernels with other sum orders must reach.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/backend/fused_attention.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace onednn_testing {

// A named call of the kernels' tests.
struct ShortCase {
  std::string name;
  FusedAttentionDesc d;
};

// B batch rows, H query heads, G key/value heads, T queries, S keys, head
// sizes hs (q, k) and hv (v, out), the usual 1 / sqrt(hs) scale.
inline FusedAttentionDesc ShortDesc(int64_t b, int64_t h, int64_t g, int64_t t, int64_t s, int64_t hs,
                                    int64_t hv) {
  FusedAttentionDesc d;
  d.batch = b, d.heads = h, d.kv_heads = g, d.queries = t, d.keys = s, d.head_dim = hs, d.value_dim = hv;
  d.scale = 1.0f / std::sqrt(static_cast<float>(hs));
  return d;
}

// got within rounding of want (2e-5 relative, and as much absolute near 0);
// an infinite want (an lse without keys) exactly.
inline void ExpectWithinRounding(const std::vector<float>& got, const std::vector<float>& want,
                                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      ASSERT_EQ(got[i], want[i]) << what << " element " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i], 2e-5f * (1.0f + std::fabs(want[i]))) << what << " element " << i;
  }
}

}  // namespace onednn_testing
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_TESTING_H_
