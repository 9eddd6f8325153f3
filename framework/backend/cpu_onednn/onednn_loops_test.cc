// The cpu_onednn loops that are cloned for AVX-512 and AVX2 promise the
// bits of their plain scalar definition at every vector width: Binary (one
// rounded operation per element, every broadcast it takes), ReduceSumTo
// (each column summed down its rows in order from 0.0f, in its register
// blocks of 64 and 16 columns, its single columns and its wide sweep) and the
// head-size copies of Permute. Each against that definition, bit for bit, at
// sizes that are not multiples of any vector width. ReLU and its gradient,
// which replaced oneDNN's eltwise primitive, against that primitive. Softmax
// and CrossEntropy's probabilities, whose short rows go eight at a time in
// vector lanes, against the row definition. LayerNorm's AVX-512 rows
// against their order definition and, within rounding, the reference.
// CrossEntropy's backward against the reference's loop, bit for bit. A
// dropout mask kept as bits by one PointwiseChain and turned back into
// factors by another against DropoutMask's factors. ScatterAdd (repeated
// ids added in order) against its definition, bit for bit.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "dnnl.hpp"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/transposed_gemm.h"
#include "framework/backend/reference/reference_backend.h"
#include "framework/core/cpu_features.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<float> Random(int64_t n, uint64_t salt) {
  RngStream rng(3, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = 4.0f * rng.Uniform(i) - 2.0f;
  return v;
}

void ExpectBitwise(const std::vector<float>& got, const std::vector<float>& want, const char* what, int64_t size) {
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << what << " at size " << size;
}

TEST(OnednnLoops, ReduceSumToSumsEachColumnInRowOrder) {
  OnednnBackend backend;
  const int64_t rows = 37;
  for (int64_t cols : {1, 5, 16, 17, 64, 80, 127, 128, 129, 200}) {
    const std::vector<float> x = Random(rows * cols, cols);
    std::vector<float> got(cols, 99.0f), want(cols, 0.0f);
    backend.ReduceSumTo(x.data(), {rows, cols}, got.data(), {cols});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) want[c] += x[r * cols + c];
    ExpectBitwise(got, want, "ReduceSumTo", cols);
  }
}

TEST(OnednnLoops, ScatterAddIsItsDefinition) {
  OnednnBackend backend;
  const int64_t n = 41;
  for (int64_t cols : {1, 3, 16, 37, 64, 100}) {
    const int64_t vocab = 7;
    const std::vector<float> table = Random(vocab * cols, cols), rows = Random(n * cols, cols + 1);
    std::vector<int32_t> ids(n);
    for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 5 + 3) % vocab);  // each id many times
    std::vector<float> d_table = table, d_want = table;  // added into, as a gradient is
    backend.ScatterAdd(rows.data(), cols, ids.data(), n, d_table.data());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < cols; ++c) d_want[ids[i] * cols + c] += rows[i * cols + c];
    ExpectBitwise(d_table, d_want, "ScatterAdd", cols);
  }
}

// The scalar definition, written here rather than taken from the reference
// backend so that the oracle does not share code with what it checks.
float ScalarDefinition(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
  }
  return 0.0f;
}

TEST(OnednnLoops, BinaryIsOneOperationPerElement) {
  OnednnBackend backend;
  const int64_t rows = 9;
  for (int64_t cols : {1, 7, 33}) {
    const int64_t n = rows * cols;
    const std::vector<float> full = Random(n, 1), other = Random(n, 2), row = Random(cols, 3), one = Random(1, 4);
    // (a, b) as full x full, full x row (a bias), row x full, full x scalar, scalar x full.
    struct Case {
      const std::vector<float>* a;
      Shape a_shape;
      const std::vector<float>* b;
      Shape b_shape;
    };
    const Case cases[] = {{&full, {rows, cols}, &other, {rows, cols}}, {&full, {rows, cols}, &row, {cols}},
                          {&row, {cols}, &full, {rows, cols}},         {&full, {rows, cols}, &one, {}},
                          {&one, {}, &full, {rows, cols}}};
    for (const Case& c : cases) {
      for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
        std::vector<float> got(n), want(n);
        backend.Binary(op, c.a->data(), c.a_shape, c.b->data(), c.b_shape, got.data(), {rows, cols});
        for (int64_t i = 0; i < n; ++i)
          want[i] = ScalarDefinition(op, (*c.a)[c.a->size() == 1 ? 0 : i % c.a->size()],
                          (*c.b)[c.b->size() == 1 ? 0 : i % c.b->size()]);
        ExpectBitwise(got, want, "Binary", cols);
      }
    }
  }
}

TEST(OnednnLoops, PermuteHeadSplitAndMergeCopyEveryRow) {
  OnednnBackend backend;
  ReferenceBackend reference;
  for (int64_t head_size : {7, 16, 32, 64}) {
    const Shape shape = {3, 5, 4, head_size};  // (B, T, H, hs)
    const std::vector<float> x = Random(3 * 5 * 4 * head_size, head_size);
    for (const std::vector<int>& perm : {std::vector<int>{0, 2, 1, 3}, std::vector<int>{2, 0, 1, 3}}) {
      std::vector<float> got(x.size()), want(x.size());
      backend.Permute(x.data(), shape, perm, got.data());
      reference.Permute(x.data(), shape, perm, want.data());
      ExpectBitwise(got, want, "Permute", head_size);
    }
  }
}

// oneDNN's eltwise_relu (alpha 0), forward and backward, on x (and dy).
void OnednnRelu(const std::vector<float>& x, const std::vector<float>& dy, std::vector<float>* y,
                std::vector<float>* dx) {
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc md({static_cast<int64_t>(x.size())}, memory::data_type::f32, memory::format_tag::a);
  dnnl::eltwise_forward forward(
      {{dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_relu, md, 0.0f, 0.0f}, engine});
  forward.execute(stream, {{DNNL_ARG_SRC, memory(md, engine, const_cast<float*>(x.data()))},
                           {DNNL_ARG_DST, memory(md, engine, y->data())}});
  dnnl::eltwise_forward::primitive_desc hint(
      {dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_relu, md, 0.0f, 0.0f}, engine);
  dnnl::eltwise_backward backward({{dnnl::algorithm::eltwise_relu, md, md, 0.0f, 0.0f}, engine, hint});
  backward.execute(stream, {{DNNL_ARG_SRC, memory(md, engine, const_cast<float*>(x.data()))},
                            {DNNL_ARG_DIFF_DST, memory(md, engine, const_cast<float*>(dy.data()))},
                            {DNNL_ARG_DIFF_SRC, memory(md, engine, dx->data())}});
  stream.wait();
}

TEST(OnednnLoops, ReluAndItsGradientAreOnednnsBitForBit) {
  const float specials[] = {-1.0f, -0.0f, 0.0f, NAN, -NAN, 1e-40f, -1e-40f, INFINITY, -INFINITY, 2.5f};
  const float gradients[] = {1.0f, -1.0f, -0.0f, 0.0f, NAN, 3.0f};
  std::vector<float> x, dy;
  for (float a : specials)
    for (float g : gradients) x.push_back(a), dy.push_back(g);
  const std::vector<float> more = Random(203, 9), more_dy = Random(203, 10);  // a length no vector width divides
  x.insert(x.end(), more.begin(), more.end());
  dy.insert(dy.end(), more_dy.begin(), more_dy.end());
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(n), dx(n), want_y(n), want_dx(n);
  OnednnBackend backend;
  backend.Unary(UnaryOp::kRelu, x.data(), y.data(), n);
  backend.UnaryBackward(UnaryOp::kRelu, x.data(), y.data(), dy.data(), dx.data(), n);
  OnednnRelu(x, dy, &want_y, &want_dx);
  ExpectBitwise(y, want_y, "ReLU", n);
  ExpectBitwise(dx, want_dx, "ReLU backward", n);
}

// One softmax row as onednn_softmax.cc defines it: the max in column order
// (a NaN never wins), std::exp(x - max), the float sum in column order, the
// products with 1 / sum; an all -inf row gives zeros.
// Returns the row's log-partition, max + log(sum) (-inf if all masked).
double SoftmaxRowDefinition(const float* x, float* y, int64_t cols) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  float max = minus_inf, sum = 0.0f;
  for (int64_t c = 0; c < cols; ++c) max = x[c] > max ? x[c] : max;
  for (int64_t c = 0; c < cols; ++c) y[c] = max == minus_inf ? 0.0f : std::exp(x[c] - max);
  for (int64_t c = 0; c < cols; ++c) sum += y[c];
  const float inv = 1.0f / sum;
  for (int64_t c = 0; c < cols; ++c) y[c] = max == minus_inf ? 0.0f : y[c] * inv;
  return max == minus_inf ? max : max + std::log(static_cast<double>(sum));
}

// Row counts around the eight-row groups (and the sixteen-row groups on
// AVX-512 CPUs), short rows (up to 16 columns, in lanes) and longer ones
// (on AVX-512 CPUs in lanes too, in blocks of 16 columns and a part);
// rows with masked keys, an all-masked row, a NaN, signed zeros and ties.
// CrossEntropy's losses are the definition's log-partition minus the
// target's logit, to the bit.
TEST(OnednnLoops, SoftmaxRowsShortAndLongAreTheRowDefinition) {
  OnednnBackend backend;
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t rows : {1, 7, 8, 9, 16, 19, 35}) {
    for (int64_t cols : {1, 2, 8, 10, 15, 16, 17, 40, 256, 1001}) {
      std::vector<float> x = Random(rows * cols, rows * 100 + cols);
      for (int64_t i = 0; i < rows * cols; i += 7) x[i] = -inf;
      if (rows > 2) std::fill(x.begin() + cols, x.begin() + 2 * cols, -inf);  // row 1: all masked
      if (rows > 3) x[3 * cols] = std::numeric_limits<float>::quiet_NaN();
      if (rows > 4 && cols > 1) x[4 * cols] = -0.0f, x[4 * cols + 1] = 0.0f;
      if (rows > 5 && cols > 1) x[5 * cols] = x[5 * cols + 1] = 1.5f;
      std::vector<float> got(rows * cols, 9.0f), want(rows * cols);
      std::vector<double> log_z(rows);
      for (int64_t r = 0; r < rows; ++r)
        log_z[r] = SoftmaxRowDefinition(x.data() + r * cols, want.data() + r * cols, cols);
      backend.Softmax(x.data(), got.data(), rows, cols);
      ExpectBitwise(got, want, "Softmax", rows * 1000 + cols);
      // CrossEntropy's probabilities are the same rows; the all-masked
      // row's target is ignored (its loss would be NaN).
      std::vector<int32_t> targets(rows, 0);
      if (rows > 2) targets[1] = -100;
      std::vector<float> loss(rows), probs(rows * cols, 9.0f), mean(1);
      backend.CrossEntropy(x.data(), targets.data(), rows, cols, -100, 0.0f, loss.data(), probs.data(), mean.data());
      ExpectBitwise(probs, want, "CrossEntropy's probabilities", rows * 1000 + cols);
      for (int64_t r = 0; r < rows; ++r) {
        if (targets[r] != 0) continue;
        const float expected = static_cast<float>(log_z[r] - x[r * cols]);
        if (std::isnan(expected)) {
          EXPECT_TRUE(std::isnan(loss[r])) << "row " << r << " of " << rows << " x " << cols;
        } else {
          EXPECT_EQ(std::memcmp(&loss[r], &expected, sizeof(float)), 0)
              << "row " << r << " of " << rows << " x " << cols << ": loss " << loss[r] << ", want " << expected;
        }
      }
    }
  }
}

// The tree onednn_rows.cc's SumOfLanes adds 16 lanes in: l + l + 8, then
// + 4, + 2, + 1.
float SumOfLanesDefinition(std::vector<float> v) {
  for (int half = 8; half >= 1; half /= 2)
    for (int l = 0; l < half; ++l) v[l] = v[l] + v[l + half];
  return v[0];
}

// LayerNorm's AVX-512 rows (Normalize, subtract_mean, 16 | cols, one
// thread's size) as onednn_rows.cc defines them, row by row.
void LayerNormRowDefinition(const float* x, const float* gamma, const float* beta, int64_t cols, float eps,
                            float* y, float* mean, float* rstd) {
  std::vector<float> lanes(16, 0.0f);
  for (int64_t c = 0; c < cols; ++c) lanes[c % 16] = lanes[c % 16] + x[c];
  const float m = SumOfLanesDefinition(lanes) / static_cast<float>(cols);
  std::fill(lanes.begin(), lanes.end(), 0.0f);
  for (int64_t c = 0; c < cols; ++c) lanes[c % 16] = std::fma(x[c] - m, x[c] - m, lanes[c % 16]);
  const float rs = 1.0f / std::sqrt(SumOfLanesDefinition(lanes) / static_cast<float>(cols) + eps);
  *mean = m, *rstd = rs;
  for (int64_t c = 0; c < cols; ++c)
    y[c] = std::fma((x[c] - m) * rs, gamma != nullptr ? gamma[c] : 1.0f, beta != nullptr ? beta[c] : 0.0f);
}

// Both loops (AVX-512, or AVX2 where oneDNN has no AVX512_CORE: the CPU's
// or under ONEDNN_MAX_CPU_ISA=AVX2, onednn_loops_avx2_test) give these bits.
TEST(OnednnLoops, LayerNormRowLoopsAreTheirDefinition) {
  if (!onednn::OnednnHasAvx512Core() && !CpuHasAvx2Fma())
    GTEST_SKIP() << "neither AVX-512 nor AVX2: LayerNorm runs on oneDNN's primitive here";
  OnednnBackend backend;
  ReferenceBackend reference;
  const int64_t rows = 37;  // AVX-512: two groups of 16 rows and 5 rows alone
  const float eps = 1e-5f;
  for (int64_t cols : {16, 32, 48, 64, 80, 256}) {
    for (int params = 0; params < 4; ++params) {  // gamma and beta, each present or not
      std::vector<float> x = Random(rows * cols, cols + params);
      for (int64_t c = 0; c < cols; ++c) x[c] = 3.0f;  // row 0 constant: variance 0
      const std::vector<float> gamma = Random(cols, 7), beta = Random(cols, 8);
      const float* g = params & 1 ? gamma.data() : nullptr;
      const float* b = params & 2 ? beta.data() : nullptr;
      std::vector<float> got(rows * cols, 9.0f), mean(rows), rstd(rows);
      backend.Normalize(x.data(), g, b, got.data(), mean.data(), rstd.data(), rows, cols, eps, true);
      std::vector<float> want(rows * cols), want_mean(rows), want_rstd(rows);
      for (int64_t r = 0; r < rows; ++r)
        LayerNormRowDefinition(x.data() + r * cols, g, b, cols, eps, want.data() + r * cols, &want_mean[r], &want_rstd[r]);
      ExpectBitwise(got, want, "LayerNorm", cols * 10 + params);
      ExpectBitwise(mean, want_mean, "LayerNorm's mean", cols * 10 + params);
      ExpectBitwise(rstd, want_rstd, "LayerNorm's rstd", cols * 10 + params);
      std::vector<float> ref(rows * cols), ref_mean(rows), ref_rstd(rows);
      reference.Normalize(x.data(), g, b, ref.data(), ref_mean.data(), ref_rstd.data(), rows, cols, eps, true);
      for (int64_t i = 0; i < rows * cols; ++i) ASSERT_NEAR(got[i], ref[i], 2e-5f) << "cols " << cols << " element " << i;
      for (int64_t r = 0; r < rows; ++r) ASSERT_NEAR(rstd[r], ref_rstd[r], 1e-5f * ref_rstd[r]) << "row " << r;
    }
  }
}

// CrossEntropyBackward is the reference's expression per element: the
// reference's bits, with and without label smoothing, an ignored row, at
// widths that are not multiples of a vector width and one large enough to
// be threaded.
TEST(OnednnLoops, CrossEntropyBackwardIsTheReferencesBits) {
  OnednnBackend backend;
  ReferenceBackend reference;
  for (int64_t cols : {1, 10, 17, 256, 1 << 15}) {
    for (float smoothing : {0.0f, 0.1f}) {
      const int64_t rows = 37;
      std::vector<float> probs = Random(rows * cols, cols);
      for (float& p : probs) p = std::abs(p);
      std::vector<int32_t> targets(rows);
      for (int64_t r = 0; r < rows; ++r) targets[r] = static_cast<int32_t>((r * 5) % cols);
      targets[3] = -100;  // ignored
      const float dloss = 0.75f;
      std::vector<float> got(rows * cols, 9.0f), want(rows * cols, 8.0f);
      backend.CrossEntropyBackward(probs.data(), targets.data(), rows, cols, -100, smoothing, &dloss, got.data());
      reference.CrossEntropyBackward(probs.data(), targets.data(), rows, cols, -100, smoothing, &dloss, want.data());
      ExpectBitwise(got, want, "CrossEntropyBackward", cols);
    }
  }
}

// A chain's dropout step writes the mask's bits; a later chain's kKeptMask
// step gives DropoutMask's factors back, bit for bit, at sizes whose tiles
// end in part vectors (the portable loops) and one large enough to be
// threaded.
TEST(OnednnLoops, KeptMaskBitsGiveTheDrawnFactorsBack) {
  OnednnBackend backend;
  ASSERT_TRUE(backend.KeepsMaskBits());
  const RngStream stream(4, RngPurpose::kDropout, 7);
  for (int64_t n : {int64_t{5}, int64_t{16}, int64_t{1000}, int64_t{2061}, (int64_t{1} << 17) + 9}) {
    for (float p : {0.1f, 0.5f}) {
      std::vector<float> want(n), drawn(n, 9.0f), again(n, 9.0f);
      std::vector<uint8_t> bits((n + 7) / 8, 0xAB);
      backend.DropoutMask(stream, p, want.data(), n);
      PointwiseStep draw;
      draw.kind = PointwiseStep::Kind::kDropoutMask;
      draw.stream = stream, draw.p = p, draw.out = drawn.data(), draw.kept = bits.data();
      backend.PointwiseChain({draw}, n);
      PointwiseStep read;
      read.kind = PointwiseStep::Kind::kKeptMask;
      read.p = p, read.out = again.data(), read.kept = bits.data();
      backend.PointwiseChain({read}, n);
      ExpectBitwise(drawn, want, "the drawing chain's factors", n);
      ExpectBitwise(again, want, "the factors from the kept bits", n);
      for (int64_t e = 0; e < n; e += 97)
        ASSERT_EQ((bits[e / 8] >> (e % 8)) & 1, want[e] != 0.0f ? 1 : 0) << "bit " << e << " of " << n;
    }
  }
}

}  // namespace
}  // namespace tvlab
