// tiled_attention_rows.h's promise: the row sums are 16 partial sums in a
// fixed order (element j into lane j % 16, each lane in order, then the
// leftover elements, then the lanes), with a rounding per multiply and per
// add, so whichever clone this CPU runs gives those bits. Fails on FMA
// contraction (as GCC did in the AVX-512 clones before -ffp-contract=off)
// or on any other order.

#include "framework/backend/cpu_onednn/tiled_attention_rows.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "framework/backend/cpu_onednn/test_values.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using onednn_testing::Values;

// The promised order, each product and sum rounded to float (volatile).
float LaneOrderedSum(const std::vector<float>& a, const std::vector<float>* b) {
  const int64_t n = static_cast<int64_t>(a.size()), full = n / 16 * 16;
  volatile float lanes[16] = {};
  for (int64_t j = 0; j < full; ++j) {
    volatile float term = b ? a[j] * (*b)[j] : a[j];
    lanes[j % 16] = lanes[j % 16] + term;
  }
  volatile float sum = 0.0f;
  for (int64_t j = full; j < n; ++j) {
    volatile float term = b ? a[j] * (*b)[j] : a[j];
    sum = sum + term;
  }
  for (int l = 0; l < 16; ++l) sum = sum + lanes[l];
  return sum;
}

TEST(TiledAttentionRows, DotRowSumsInTheLaneOrder) {
  for (int64_t n : {0, 1, 15, 16, 17, 64, 100, 256}) {
    const auto a = Values(n, 1), b = Values(n, 2);
    const float got = tiled_rows::DotRow(a.data(), b.data(), n);
    const float want = LaneOrderedSum(a, &b);
    EXPECT_EQ(0, std::memcmp(&got, &want, sizeof(float))) << "n " << n << ": " << got << " vs " << want;
  }
}

TEST(TiledAttentionRows, ExpShiftedSumWritesExpsAndSumsThemInTheLaneOrder) {
  for (int64_t n : {1, 15, 16, 33, 128, 255}) {
    auto row = Values(n, 3);
    row[0] = -std::numeric_limits<float>::infinity();  // a hidden key: exactly 0
    const auto scores = row;
    const float shift = 0.75f;
    const float sum = tiled_rows::ExpShiftedSum(row.data(), n, shift);
    EXPECT_EQ(row[0], 0.0f);
    for (int64_t j = 1; j < n; ++j) {
      const float want = std::exp(scores[j] - shift);
      EXPECT_NEAR(row[j], want, 4e-7f * want) << "j " << j;
    }
    const float want_sum = LaneOrderedSum(row, nullptr);
    EXPECT_EQ(0, std::memcmp(&sum, &want_sum, sizeof(float))) << "n " << n;
  }
}

}  // namespace
}  // namespace tvlab
