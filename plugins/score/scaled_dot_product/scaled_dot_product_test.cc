// The worked example of seed lesson 004 ("Ví dụ"): three positions, causal
// mask, Q = [1, 0] at every position, K = [0,1], [1,0], [0,-1],
// V = [2,0], [0,2], [2,2], head size 2.

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(ScaledDotProduct, ReproducesTheSeedsWorkedCausalExample) {
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    SeedAttentionExample ex = RunSeedAttentionExample("scaled_dot_product");
    const std::vector<float>& w = ex.weights;  // (1, 1, 3, 3)
    const std::vector<float>& out = ex.output;
    // Row 0 sees only key 0 and returns V0.
    EXPECT_FLOAT_EQ(w[0], 1.0f);
    EXPECT_EQ(w[1], 0.0f);
    EXPECT_EQ(w[2], 0.0f);
    EXPECT_NEAR(out[0], 2.0f, 1e-6);
    EXPECT_NEAR(out[1], 0.0f, 1e-6);
    // Row 1: weights [0.330238, 0.669762, 0] and output [0.660477, 1.339523].
    EXPECT_NEAR(w[3], 0.330238f, 1e-6);
    EXPECT_NEAR(w[4], 0.669762f, 1e-6);
    EXPECT_EQ(w[5], 0.0f);
    EXPECT_NEAR(out[2], 0.660477f, 1e-6);
    EXPECT_NEAR(out[3], 1.339523f, 1e-6);
    // Row 2: weights [0.248255, 0.503490, 0.248255], output [0.993020, 1.503490].
    EXPECT_NEAR(w[6], 0.248255f, 1e-6);
    EXPECT_NEAR(w[7], 0.503490f, 1e-6);
    EXPECT_NEAR(w[8], 0.248255f, 1e-6);
    EXPECT_NEAR(out[4], 0.993020f, 1e-6);
    EXPECT_NEAR(out[5], 1.503490f, 1e-6);
  }
}

}  // namespace
}  // namespace tvlab
