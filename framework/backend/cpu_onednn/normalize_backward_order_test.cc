// OnednnBackend::NormalizeBackward sums each row's g and g * xhat (and
// Normalize's RMSNorm rows their squares) in the fixed order that
// onednn_normalize_backward.cc (and onednn_rows.cc) promises (eight lanes,
// then the lanes in pairs, then the tail), so every clone, the AVX-512
// and AVX2 eight-row loops (19 rows: two groups of eight and three single
// rows; the AVX-512 passes with a masked last vector where cols is not a
// multiple of 16, the AVX2 ones on multiples of 8; the AVX2 loops under
// normalize_backward_order_avx2_test's ONEDNN_MAX_CPU_ISA=AVX2) and every
// machine give the same bits: dx (with and without an addend, as
// NormalizeBackwardAdd), dgamma and dbeta against that order written out in
// scalar code, bit for bit, on rows of values from 2^-20 to 2^40 that cancel
// in pairs, where another order of the double sums moves mean(g) and so dx.

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// A float of random sign with an exponent from -20 to 40.
float Wide(const RngStream& rng, int64_t i) {
  const float mantissa = 1.0f + rng.Uniform(3 * i);
  const int exponent = static_cast<int>(rng.UniformInt(3 * i + 1, 61)) - 20;
  return std::ldexp(rng.Uniform(3 * i + 2) < 0.5f ? -mantissa : mantissa, exponent);
}

// Rows whose sums cancel: column cols - 1 - c mirrors column c (x and gamma
// equal, dy negated), so g and g * xhat cancel in pairs, except column 1
// (and the middle one of an odd row), whose dy is near 1. The double sums
// then keep or lose that remainder's low bits by their order, which the
// float mean(g) and mean(g * xhat), and so dx, show.
struct Rows {
  std::vector<float> x, dy, gamma;
};
Rows Cancelling(int64_t rows, int64_t cols, uint64_t salt) {
  const RngStream rng(5, RngPurpose::kInit, salt);
  Rows data{std::vector<float>(rows * cols), std::vector<float>(rows * cols), std::vector<float>(cols)};
  for (int64_t c = 0; c < cols; ++c) data.gamma[c] = c < cols - 1 - c ? Wide(rng, c) : data.gamma[cols - 1 - c];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c, mirror = r * cols + cols - 1 - c;
      const bool first_half = c < cols - 1 - c;
      data.x[i] = first_half ? Wide(rng, 1000 + i) : data.x[mirror];
      data.dy[i] = first_half ? Wide(rng, 100000 + i) : (c == cols - 1 - c ? 0.5f : -data.dy[mirror]);
    }
    if (cols > 2) data.dy[r * cols + 1] = 1.0f + 0.125f * static_cast<float>(r);
  }
  return data;
}

// The promised order for one row: lane l sums columns l, l + 8, ... below
// cols rounded down to 8; lanes added ((0+1)+(2+3))+((4+5)+(6+7)); then the
// tail in order.
double SumInOrder(const std::vector<double>& terms) {
  const int64_t cols = static_cast<int64_t>(terms.size()), whole = cols / 8 * 8;
  double lane[8] = {};
  for (int64_t c = 0; c < whole; ++c) lane[c % 8] += terms[c];
  double total = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (int64_t c = whole; c < cols; ++c) total += terms[c];
  return total;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The addend of NormalizeBackwardAdd's test: values of either sign.
std::vector<float> Addend(int64_t n) {
  std::vector<float> addend(n);
  for (int64_t i = 0; i < n; ++i) addend[i] = 0.375f * static_cast<float>(i % 7) - 1.0f;
  return addend;
}

TEST(NormalizeBackwardOrder, RowSumsInThePromisedOrderBitForBit) {
  OnednnBackend backend;
  const int64_t rows = 19;
  for (int64_t cols : {3, 8, 13, 16, 24, 64, 67}) {
    for (bool with_gamma : {true, false}) {
      for (bool subtract_mean : {true, false}) {
        for (bool with_addend : {false, true}) {
          const Rows data = Cancelling(rows, cols, static_cast<uint64_t>(cols));
          const std::vector<float>& x = data.x;
          const std::vector<float>& dy = data.dy;
          const float* gamma = with_gamma ? data.gamma.data() : nullptr;
          const std::vector<float> addend = Addend(rows * cols);
          std::vector<float> mean(rows), rstd(rows);
          for (int64_t r = 0; r < rows; ++r) mean[r] = 0.25f * r, rstd[r] = 1.0f / (1.0f + r);
          std::vector<float> dx(rows * cols), dgamma(cols, 0.5f), dbeta(cols, -0.5f);
          if (with_addend) {
            backend.NormalizeBackwardAdd(x.data(), gamma, mean.data(), rstd.data(), dy.data(), addend.data(), dx.data(),
                                         dgamma.data(), dbeta.data(), rows, cols, subtract_mean);
          } else {
            backend.NormalizeBackward(x.data(), gamma, mean.data(), rstd.data(), dy.data(), dx.data(), dgamma.data(),
                                      dbeta.data(), rows, cols, subtract_mean);
          }
          std::vector<float> want_dgamma(cols, 0.0f), want_dbeta(cols, 0.0f);
          for (int64_t r = 0; r < rows; ++r) {
            const float* xr = x.data() + r * cols;
            const float* dyr = dy.data() + r * cols;
            const float mu = mean[r], rs = rstd[r];
            std::vector<double> g_terms(cols), gx_terms(cols);
            for (int64_t c = 0; c < cols; ++c) {
              const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
              g_terms[c] = g;
              gx_terms[c] = static_cast<double>(g) * ((xr[c] - mu) * rs);
              want_dgamma[c] += dyr[c] * ((xr[c] - mu) * rs);
              want_dbeta[c] += dyr[c];
            }
            const float mg = subtract_mean ? static_cast<float>(SumInOrder(g_terms) / cols) : 0.0f;
            const float mgx = static_cast<float>(SumInOrder(gx_terms) / cols);
            for (int64_t c = 0; c < cols; ++c) {
              const float xhat = (xr[c] - mu) * rs;
              const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
              const float term = rs * (g - mg - xhat * mgx);
              const float want = with_addend ? addend[r * cols + c] + term : term;
              ASSERT_EQ(Bits(dx[r * cols + c]), Bits(want))
                  << "cols " << cols << " gamma " << with_gamma << " subtract_mean " << subtract_mean << " addend "
                  << with_addend << " row " << r << " col " << c << ": " << dx[r * cols + c] << " against " << want;
            }
          }
          for (int64_t c = 0; c < cols; ++c) {
            ASSERT_EQ(Bits(dgamma[c]), Bits(0.5f + want_dgamma[c])) << "dgamma col " << c;
            ASSERT_EQ(Bits(dbeta[c]), Bits(-0.5f + want_dbeta[c])) << "dbeta col " << c;
          }
        }
      }
    }
  }
}

// RMSNorm's forward (Normalize without subtract_mean): y and rstd bit for
// bit against its arithmetic written out (onednn_rows.cc, RmsNormRows):
// squares in double, summed in the promised order, rstd in double. Positive
// squares summed in double show no order at float precision; the last row,
// 1 and then 2^-13s, shows squares summed in float (each 2^-26 lost
// against 1).
TEST(NormalizeBackwardOrder, RmsNormForwardSumsSquaresInThePromisedOrderBitForBit) {
  OnednnBackend backend;
  const int64_t rows = 7;
  const float eps = 1e-5f;
  for (int64_t cols : {3, 8, 13, 64, 67}) {
    for (bool affine : {true, false}) {
      Rows data = Cancelling(rows, cols, static_cast<uint64_t>(cols) + 100);
      for (int64_t c = 0; c < cols; ++c) data.x[(rows - 1) * cols + c] = c == 0 ? 1.0f : 0x1p-13f;
      const float* gamma = affine ? data.gamma.data() : nullptr;
      const float* beta = affine ? data.dy.data() : nullptr;  // any cols numbers
      std::vector<float> y(rows * cols), mean(rows, 9.0f), rstd(rows);
      backend.Normalize(data.x.data(), gamma, beta, y.data(), mean.data(), rstd.data(), rows, cols, eps,
                        /*subtract_mean=*/false);
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = data.x.data() + r * cols;
        std::vector<double> squares(cols);
        for (int64_t c = 0; c < cols; ++c) squares[c] = static_cast<double>(xr[c]) * xr[c];
        const float rs = static_cast<float>(1.0 / std::sqrt(SumInOrder(squares) / cols + eps));
        ASSERT_EQ(Bits(rstd[r]), Bits(rs)) << "cols " << cols << " row " << r;
        ASSERT_EQ(Bits(mean[r]), Bits(0.0f)) << "cols " << cols << " row " << r;
        for (int64_t c = 0; c < cols; ++c) {
          float want = xr[c] * rs;
          if (gamma) want *= gamma[c];
          if (beta) want += beta[c];
          ASSERT_EQ(Bits(y[r * cols + c]), Bits(want)) << "cols " << cols << " row " << r << " col " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tvlab
