// The seed lesson 004 worked example ("Ví dụ") without the 1/sqrt(d) scale:
// Q = [1, 0] at every position, K = [0,1], [1,0], [0,-1], V = [2,0], [0,2],
// [2,2], causal. Logits are q.k exactly, so row 2 is [0, 1, 0] and its
// weights are [1, e, 1] / (2 + e).

#include <cmath>

#include "framework/autograd/ops.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(DotProduct, LogitsAreUnscaledDotProducts) {
  ModelDims dims;
  dims.head_dim = 2;
  auto score = MakeAttentionScore("dot_product", dims);
  Var q(Tensor::FromVector({1, 1, 3, 2}, {1, 0, 1, 0, 1, 0}));
  Var k(Tensor::FromVector({1, 1, 3, 2}, {0, 1, 1, 0, 0, -1}));
  EXPECT_EQ(score->Logits(q, k).value().ToVector(),
            (std::vector<float>{0, 1, 0, 0, 1, 0, 0, 1, 0}));
}

TEST(DotProduct, ReproducesTheSeedsExampleWithoutScaling) {
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    SeedAttentionExample ex = RunSeedAttentionExample("dot_product");
    const std::vector<float>& w = ex.weights;  // (1, 1, 3, 3)
    const std::vector<float>& out = ex.output;
    const double e = std::exp(1.0);
    EXPECT_FLOAT_EQ(w[0], 1.0f);  // row 0 sees only key 0
    EXPECT_NEAR(w[3], 1 / (1 + e), 1e-6);
    EXPECT_NEAR(w[4], e / (1 + e), 1e-6);
    EXPECT_EQ(w[5], 0.0f);
    EXPECT_NEAR(w[6], 1 / (2 + e), 1e-6);
    EXPECT_NEAR(w[7], e / (2 + e), 1e-6);
    EXPECT_NEAR(w[8], 1 / (2 + e), 1e-6);
    // Row 2: ([2, 0] + e [0, 2] + [2, 2]) / (2 + e).
    EXPECT_NEAR(out[4], 4 / (2 + e), 1e-6);
    EXPECT_NEAR(out[5], (2 * e + 2) / (2 + e), 1e-6);
  }
}

}  // namespace
}  // namespace tvlab
