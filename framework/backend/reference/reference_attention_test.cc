// The reference backend's attention kernels against written definitions: the
// mask's bias, the position tables, fused attention (fused_attention.h's
// formula written out in double) and its backward (central differences of
// the forward).

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "framework/backend/reference/reference_backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Causal row i sees keys j <= offset + i; padding hides keys j >= the row's
// length; a row with no key sees nothing.
TEST(ReferenceAttention, MaskBiasCausalPaddingAndBoth) {
  ReferenceBackend ref;
  const int64_t t = 3, s = 5;
  std::vector<float> c(t * s), p(3 * t * s);
  ref.AttentionMaskBias(CausalMask(/*offset=*/2), t, s, c.data());  // queries at 2, 3, 4
  EXPECT_EQ(c, std::vector<float>({0, 0, 0, -kInf, -kInf, 0, 0, 0, 0, -kInf, 0, 0, 0, 0, 0}));
  AttentionMask both = KeyPaddingMask({5, 2, 0});
  both.causal = true, both.causal_offset = 1;
  ref.AttentionMaskBias(both, t, s, p.data());  // (R = 3, 1, T, S)
  EXPECT_EQ(std::vector<float>(p.begin() + t * s, p.begin() + 2 * t * s),  // row 1: length 2
            std::vector<float>({0, 0, -kInf, -kInf, -kInf, 0, 0, -kInf, -kInf, -kInf,
                                0, 0, -kInf, -kInf, -kInf}));
  EXPECT_EQ(p[0 * s + 2], -kInf);  // row 0, query 0 at position 1: key 2 is its future
  EXPECT_EQ(p[0 * s + 1], 0.0f);
  for (int64_t i = 2 * t * s; i < 3 * t * s; ++i) EXPECT_EQ(p[i], -kInf);  // row 2: no keys
}

TEST(ReferenceAttention, RotarySinusoidalAndAlibiTables) {
  ReferenceBackend ref;
  const int64_t t = 5, d = 6, offset = 1000;
  std::vector<float> cos(t * d / 2), sin(t * d / 2);
  ref.RotaryTables(offset, t, d, 10000.0, cos.data(), sin.data());
  // Pair i = 1 of position offset + 2: angle (offset + 2) * 10000^(-2/6).
  const double angle = (offset + 2) * std::pow(10000.0, -2.0 / 6.0);
  EXPECT_FLOAT_EQ(cos[2 * 3 + 1], static_cast<float>(std::cos(angle)));
  EXPECT_FLOAT_EQ(sin[2 * 3 + 1], static_cast<float>(std::sin(angle)));

  std::vector<float> table(t * d);
  ref.SinusoidalTable(0, t, d, 10000.0, table.data());
  EXPECT_FLOAT_EQ(table[0], 0.0f);  // sin(0)
  EXPECT_FLOAT_EQ(table[1], 1.0f);  // cos(0)
  EXPECT_FLOAT_EQ(table[1 * d + 0], static_cast<float>(std::sin(1.0)));
  EXPECT_FLOAT_EQ(table[3 * d + 4], static_cast<float>(std::sin(3.0 / std::pow(10000.0, 4.0 / 6))));
  EXPECT_FLOAT_EQ(table[3 * d + 5], static_cast<float>(std::cos(3.0 / std::pow(10000.0, 4.0 / 6))));

  const std::vector<double> slopes = {0.5, 0.25};
  std::vector<float> bias(2 * 3 * 4);  // (1, H=2, T=3, S=4), queries at 1..3
  ref.AlibiBias(slopes, 1, 3, 4, bias.data());
  EXPECT_EQ(bias[(1 * 3 + 2) * 4 + 0], -0.25f * 3);  // head 1, query 3, key 0
  EXPECT_EQ(bias[(0 * 3 + 0) * 4 + 1], 0.0f);        // query 1 on key 1
  EXPECT_EQ(bias[(0 * 3 + 0) * 4 + 3], -0.5f * 2);   // query 1 on key 3
}

// A small case with GQA (2 query heads on 1 kv head), causal offset 1 and
// ALiBi slopes (1 on head 0, 0 on head 1).
FusedAttentionDesc SmallCase() {
  FusedAttentionDesc d;
  d.batch = 1, d.heads = 2, d.kv_heads = 1, d.queries = 3, d.keys = 4;
  d.head_dim = 2, d.value_dim = 1, d.scale = 0.5f;
  d.mask = CausalMask(1);  // query i sees keys 0 .. i + 1
  d.alibi_slopes = {1.0, 0.0};
  d.alibi_offset = 1;
  return d;
}

// Every hidden key has weight 0, the rest follow softmax; lse is the
// log-sum-exp of the visible logits.
TEST(ReferenceAttention, FusedAttentionIsTheDefinition) {
  ReferenceBackend ref;
  const FusedAttentionDesc d = SmallCase();
  const std::vector<float> q = {1, 0, 0, 1, 1, 1, /*head 1*/ 1, 0, 0, 1, 1, 1};
  const std::vector<float> k = {1, 0, 0, 1, 1, 1, -1, 0};
  const std::vector<float> v = {1, 2, 3, 4};
  std::vector<float> out(6), lse(6);
  ref.FusedAttention(d, q.data(), k.data(), v.data(), out.data(), lse.data());
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 3; ++i) {
      double logits[4], max = -1e30, sum = 0, want = 0;
      const int64_t visible = i + 2;
      for (int64_t j = 0; j < visible; ++j) {
        logits[j] = 0.5 * (q[(h * 3 + i) * 2] * k[j * 2] + q[(h * 3 + i) * 2 + 1] * k[j * 2 + 1]) -
                    d.alibi_slopes[h] * std::abs(1 + i - j);
        max = std::max(max, logits[j]);
      }
      for (int64_t j = 0; j < visible; ++j) sum += std::exp(logits[j] - max);
      for (int64_t j = 0; j < visible; ++j) want += std::exp(logits[j] - max) / sum * v[j];
      EXPECT_NEAR(out[h * 3 + i], want, 1e-6) << "head " << h << ", query " << i;
      EXPECT_NEAR(lse[h * 3 + i], max + std::log(sum), 1e-6) << "head " << h << ", query " << i;
    }
}

// dq, dk, dv of L = sum(dout * out) against central differences of the
// forward, with a padded row that sees no key (all its gradients are 0).
TEST(ReferenceAttention, FusedAttentionBackwardIsTheForwardsDerivative) {
  ReferenceBackend ref;
  FusedAttentionDesc d = SmallCase();
  d.batch = 2, d.value_dim = 2;
  d.mask.key_lengths = {4, 0};  // batch row 1 sees no key
  std::vector<float> q(2 * 2 * 3 * 2), k(2 * 1 * 4 * 2), v(2 * 1 * 4 * 2), dout(2 * 2 * 3 * 2);
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.7 * i + 0.1);
  for (size_t i = 0; i < k.size(); ++i) k[i] = std::cos(0.9 * i);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.3f * i - 1.0f;
  for (size_t i = 0; i < dout.size(); ++i) dout[i] = std::sin(1.3 * i);
  auto loss = [&]() {
    std::vector<float> out(dout.size()), lse(2 * 2 * 3);
    ref.FusedAttention(d, q.data(), k.data(), v.data(), out.data(), lse.data());
    double l = 0;
    for (size_t i = 0; i < out.size(); ++i) l += static_cast<double>(dout[i]) * out[i];
    return l;
  };
  auto slope = [&](float* x) {
    const float keep = *x, h = 1e-2f;
    *x = keep + h;
    const double up = loss();
    *x = keep - h;
    const double down = loss();
    *x = keep;
    return (up - down) / (2 * h);
  };
  std::vector<float> out(dout.size()), lse(2 * 2 * 3), dq(q.size()), dk(k.size()), dv(v.size());
  ref.FusedAttention(d, q.data(), k.data(), v.data(), out.data(), lse.data());
  ref.FusedAttentionBackward(d, q.data(), k.data(), v.data(), out.data(), lse.data(),
                             dout.data(), dq.data(), dk.data(), dv.data(), nullptr);
  for (size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(dq[i], slope(&q[i]), 2e-3) << "dq " << i;
  for (size_t i = 0; i < k.size(); ++i) EXPECT_NEAR(dk[i], slope(&k[i]), 2e-3) << "dk " << i;
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(dv[i], slope(&v[i]), 2e-3) << "dv " << i;
  for (size_t i = q.size() / 2; i < q.size(); ++i) EXPECT_EQ(dq[i], 0.0f) << "dq " << i;
}

// Soft-cap and sink by their definition: logit = c tanh(l / c), and one more
// softmax entry of logit sink_h and value 0; a row that sees no key puts
// all its weight on the sink (out 0, lse = the sink's logit).
TEST(ReferenceAttention, SoftCapAndSinkAreTheDefinition) {
  ReferenceBackend ref;
  FusedAttentionDesc d = SmallCase();
  d.batch = 2;
  d.mask.key_lengths = {4, 0};  // batch row 1 sees no key
  d.logit_softcap = 0.4f;
  d.sink_logits = {0.3f, -0.7f};
  const std::vector<float> q = {1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1,
                                2, 1, 0, 3, 1, 1, 1, 0, 0, 1, 1, 1};
  const std::vector<float> k = {1, 0, 0, 1, 1, 1, -1, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> out(12), lse(12);
  ref.FusedAttention(d, q.data(), k.data(), v.data(), out.data(), lse.data());
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 3; ++i) {
      const int64_t row = h * 3 + i;
      double logits[4], sum = std::exp(static_cast<double>(d.sink_logits[h])), want = 0;
      const int64_t visible = i + 2;
      for (int64_t j = 0; j < visible; ++j) {
        const double l = 0.5 * (q[row * 2] * k[j * 2] + q[row * 2 + 1] * k[j * 2 + 1]) -
                         d.alibi_slopes[h] * std::abs(1 + i - j);
        logits[j] = 0.4 * std::tanh(l / 0.4);
        sum += std::exp(logits[j]);
      }
      for (int64_t j = 0; j < visible; ++j) want += std::exp(logits[j]) / sum * v[j];
      EXPECT_NEAR(out[row], want, 1e-6) << "head " << h << ", query " << i;
      EXPECT_NEAR(lse[row], std::log(sum), 1e-6) << "head " << h << ", query " << i;
      EXPECT_EQ(out[6 + row], 0.0f) << "batch row 1 sees only the sink";
      EXPECT_FLOAT_EQ(lse[6 + row], d.sink_logits[h]);
    }
}

// With soft-cap and sink, dq, dk, dv still against central differences
// (the sink changes lse only; the cap's slope enters ds).
TEST(ReferenceAttention, SoftCapAndSinkBackwardIsTheForwardsDerivative) {
  ReferenceBackend ref;
  FusedAttentionDesc d = SmallCase();
  d.value_dim = 2, d.logit_softcap = 0.6f, d.sink_logits = {0.2f, 1.1f};
  std::vector<float> q(2 * 3 * 2), k(4 * 2), v(4 * 2), dout(2 * 3 * 2);
  for (size_t i = 0; i < q.size(); ++i) q[i] = 2 * std::sin(0.7 * i + 0.1);
  for (size_t i = 0; i < k.size(); ++i) k[i] = std::cos(0.9 * i);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.3f * i - 1.0f;
  for (size_t i = 0; i < dout.size(); ++i) dout[i] = std::sin(1.3 * i);
  auto loss = [&]() {
    std::vector<float> out(dout.size()), lse(6);
    ref.FusedAttention(d, q.data(), k.data(), v.data(), out.data(), lse.data());
    double l = 0;
    for (size_t i = 0; i < out.size(); ++i) l += static_cast<double>(dout[i]) * out[i];
    return l;
  };
  auto slope = [&](float* x) {
    const float keep = *x, h = 1e-2f;
    *x = keep + h;
    const double up = loss();
    *x = keep - h;
    const double down = loss();
    *x = keep;
    return (up - down) / (2 * h);
  };
  std::vector<float> out(dout.size()), lse(6), dq(q.size()), dk(k.size()), dv(v.size());
  ref.FusedAttention(d, q.data(), k.data(), v.data(), out.data(), lse.data());
  ref.FusedAttentionBackward(d, q.data(), k.data(), v.data(), out.data(), lse.data(),
                             dout.data(), dq.data(), dk.data(), dv.data(), nullptr);
  for (size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(dq[i], slope(&q[i]), 2e-3) << "dq " << i;
  for (size_t i = 0; i < k.size(); ++i) EXPECT_NEAR(dk[i], slope(&k[i]), 2e-3) << "dk " << i;
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(dv[i], slope(&v[i]), 2e-3) << "dv " << i;
}

}  // namespace
}  // namespace tvlab
