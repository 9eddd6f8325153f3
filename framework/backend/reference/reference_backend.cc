#include "framework/backend/reference/reference_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <vector>

#include "framework/core/check.h"

namespace tvlab {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;

inline float Forward(UnaryOp op, float x) {
  switch (op) {
    case UnaryOp::kRelu: return x > 0 ? x : 0.0f;
    case UnaryOp::kGeluErf: return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
    case UnaryOp::kGeluTanh:
      return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    case UnaryOp::kSilu: return x / (1.0f + std::exp(-x));
    case UnaryOp::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
    case UnaryOp::kTanh: return std::tanh(x);
    case UnaryOp::kExp: return std::exp(x);
    case UnaryOp::kLog: return std::log(x);
    case UnaryOp::kSqrt: return std::sqrt(x);
    case UnaryOp::kSquare: return x * x;
  }
  return 0.0f;
}

// d f(x) / dx, given x and y = f(x).
inline float Derivative(UnaryOp op, float x, float y) {
  switch (op) {
    case UnaryOp::kRelu: return x > 0 ? 1.0f : 0.0f;
    case UnaryOp::kGeluErf: {
      float cdf = 0.5f * (1.0f + std::erf(x * kInvSqrt2));
      float pdf = std::exp(-0.5f * x * x) * 0.39894228040143268f;
      return cdf + x * pdf;
    }
    case UnaryOp::kGeluTanh: {
      float inner = kSqrt2OverPi * (x + 0.044715f * x * x * x);
      float t = std::tanh(inner);
      float dinner = kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x);
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner;
    }
    case UnaryOp::kSilu: {
      float s = 1.0f / (1.0f + std::exp(-x));
      return s * (1.0f + x * (1.0f - s));
    }
    case UnaryOp::kSigmoid: return y * (1.0f - y);
    case UnaryOp::kTanh: return 1.0f - y * y;
    case UnaryOp::kExp: return y;
    case UnaryOp::kLog: return 1.0f / x;
    case UnaryOp::kSqrt: return 0.5f / y;
    case UnaryOp::kSquare: return 2.0f * x;
  }
  return 0.0f;
}

float Apply(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
  }
  return 0.0f;
}

// Strides of `shape` right-aligned into `rank` dims, 0 where it broadcasts.
Shape BroadcastStrides(const Shape& shape, size_t rank) {
  Shape strides(rank, 0);
  Shape own = ContiguousStrides(shape);
  size_t pad = rank - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) strides[pad + i] = shape[i] == 1 ? 0 : own[i];
  return strides;
}

}  // namespace

namespace {

// The fp32 GEMM, products summed in double.
void GemmLoops(const GemmDesc& d, const float* a, const float* b, float* c) {
  for (int64_t p = 0; p < d.batch; ++p) {
    const float* A = a + p * d.stride_a;
    const float* B = b + p * d.stride_b;
    float* C = c + p * d.stride_c;
    for (int64_t i = 0; i < d.m; ++i) {
      for (int64_t j = 0; j < d.n; ++j) {
        double sum = 0.0;
        for (int64_t q = 0; q < d.k; ++q) {
          float av = d.trans_a ? A[q * d.m + i] : A[i * d.k + q];
          float bv = d.trans_b ? B[j * d.k + q] : B[q * d.n + j];
          sum += static_cast<double>(av) * bv;
        }
        float prior = d.beta == 0.0f ? 0.0f : d.beta * C[i * d.n + j];
        C[i * d.n + j] = d.alpha * static_cast<float>(sum) + prior;
      }
    }
  }
}

// The `size`-element matrices of an operand at batch `stride` (0: shared),
// each element rounded to `precision`.
std::vector<float> Rounded(const float* x, int64_t batch, int64_t stride, int64_t size,
                           Precision precision) {
  const int64_t span = stride == 0 || batch == 0 ? size : (batch - 1) * stride + size;
  std::vector<float> out(x, x + span);
  for (float& v : out) v = RoundTo(precision, v);
  return out;
}

}  // namespace

// bf16 / tf32: each operand rounded as the hardware formats round it
// (precision.h), then the fp32 GEMM; this is the oracle of the other
// backends' bf16/tf32 GEMMs.
void ReferenceBackend::Gemm(const GemmDesc& d, const float* a, const float* b, float* c) {
  if (d.precision == Precision::kFp32) return GemmLoops(d, a, b, c);
  const std::vector<float> ra = Rounded(a, d.batch, d.stride_a, d.m * d.k, d.precision);
  const std::vector<float> rb = Rounded(b, d.batch, d.stride_b, d.k * d.n, d.precision);
  GemmLoops(d, ra.data(), rb.data(), c);
}

// Instantiates the element loop once per op, so the switch is outside it.
template <typename Body>
void ForEachOp(UnaryOp op, Body body) {
  switch (op) {
#define TVLAB_OP_CASE(k) case UnaryOp::k: return body(std::integral_constant<UnaryOp, UnaryOp::k>());
    TVLAB_OP_CASE(kRelu) TVLAB_OP_CASE(kGeluErf) TVLAB_OP_CASE(kGeluTanh) TVLAB_OP_CASE(kSilu)
    TVLAB_OP_CASE(kSigmoid) TVLAB_OP_CASE(kTanh) TVLAB_OP_CASE(kExp) TVLAB_OP_CASE(kLog)
    TVLAB_OP_CASE(kSqrt) TVLAB_OP_CASE(kSquare)
#undef TVLAB_OP_CASE
  }
}

void ReferenceBackend::Unary(UnaryOp op, const float* x, float* y, int64_t n) {
  ForEachOp(op, [&](auto k) {
    for (int64_t i = 0; i < n; ++i) y[i] = Forward(k.value, x[i]);
  });
}

void ReferenceBackend::UnaryBackward(UnaryOp op, const float* x, const float* y,
                                     const float* dy, float* dx, int64_t n) {
  ForEachOp(op, [&](auto k) {
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * Derivative(k.value, x[i], y[i]);
  });
}

void ReferenceBackend::Binary(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
                              const Shape& b_shape, float* out, const Shape& out_shape) {
  const size_t rank = out_shape.size();
  Shape sa = BroadcastStrides(a_shape, rank), sb = BroadcastStrides(b_shape, rank);
  Shape index(rank, 0);
  const int64_t n = NumElements(out_shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) ia += index[d] * sa[d], ib += index[d] * sb[d];
    out[flat] = Apply(op, a[ia], b[ib]);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
}

void ReferenceBackend::ReduceSumTo(const float* x, const Shape& x_shape, float* out,
                                   const Shape& out_shape) {
  const size_t rank = x_shape.size();
  TVLAB_CHECK(out_shape.size() <= rank);
  Shape so = BroadcastStrides(out_shape, rank);
  const int64_t n_out = NumElements(out_shape);
  std::vector<double> acc(n_out, 0.0);
  Shape index(rank, 0);
  const int64_t n = NumElements(x_shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t io = 0;
    for (size_t d = 0; d < rank; ++d) io += index[d] * so[d];
    acc[io] += x[flat];
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++index[d] < x_shape[d]) break;
      index[d] = 0;
    }
  }
  for (int64_t i = 0; i < n_out; ++i) out[i] = static_cast<float>(acc[i]);
}

void ReferenceBackend::Softmax(const float* x, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < cols; ++c) max = std::max(max, xr[c]);
    if (max == -std::numeric_limits<float>::infinity()) {
      for (int64_t c = 0; c < cols; ++c) yr[c] = 0.0f;
      continue;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += (yr[c] = std::exp(xr[c] - max));
    for (int64_t c = 0; c < cols; ++c) yr[c] = static_cast<float>(yr[c] / sum);
  }
}

void ReferenceBackend::SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                                       int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * cols;
    const float* dyr = dy + r * cols;
    double dot = 0.0;
    for (int64_t c = 0; c < cols; ++c) dot += static_cast<double>(yr[c]) * dyr[c];
    for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] = yr[c] * (dyr[c] - static_cast<float>(dot));
  }
}

void ReferenceBackend::AttentionMaskBias(const AttentionMask& mask, int64_t t, int64_t s,
                                         float* out) {
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t rows = mask.key_lengths.empty() ? 1 : static_cast<int64_t>(mask.key_lengths.size());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t visible_keys = mask.key_lengths.empty() ? s : mask.key_lengths[r];
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j) {
        const bool future = mask.causal && j > mask.causal_offset + i;
        const bool padding = j >= visible_keys;
        out[(r * t + i) * s + j] = future || padding ? -inf : 0.0f;  // (R, 1, T, S)
      }
  }
}

void ReferenceBackend::Normalize(const float* x, const float* gamma, const float* beta, float* y,
                                 float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                                 bool subtract_mean) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double mu = 0.0;
    if (subtract_mean) {
      for (int64_t c = 0; c < cols; ++c) mu += xr[c];
      mu /= cols;
    }
    double var = 0.0;
    for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mu) * (xr[c] - mu);
    var /= cols;
    float rs = static_cast<float>(1.0 / std::sqrt(var + eps));
    mean[r] = static_cast<float>(mu);
    rstd[r] = rs;
    for (int64_t c = 0; c < cols; ++c) {
      float v = (xr[c] - static_cast<float>(mu)) * rs;
      if (gamma) v *= gamma[c];
      if (beta) v += beta[c];
      y[r * cols + c] = v;
    }
  }
}

void ReferenceBackend::NormalizeBackward(const float* x, const float* gamma, const float* mean,
                                         const float* rstd, const float* dy, float* dx,
                                         float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                                         bool subtract_mean) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    // xhat = (x - mean) * rstd; g = dy * gamma.
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (LayerNorm)
    // dx = rstd * (g - xhat * mean(g * xhat))             (RMSNorm)
    double mean_g = 0.0, mean_gx = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      float xhat = (xr[c] - mean[r]) * rstd[r];
      float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
      mean_g += g;
      mean_gx += static_cast<double>(g) * xhat;
      if (dgamma) dgamma[c] += dyr[c] * xhat;
      if (dbeta) dbeta[c] += dyr[c];
    }
    mean_g /= cols;
    mean_gx /= cols;
    if (!subtract_mean) mean_g = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      float xhat = (xr[c] - mean[r]) * rstd[r];
      float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
      dx[r * cols + c] =
          rstd[r] * (g - static_cast<float>(mean_g) - xhat * static_cast<float>(mean_gx));
    }
  }
}

void ReferenceBackend::Permute(const float* x, const Shape& shape, const std::vector<int>& perm,
                               float* y) {
  const size_t rank = shape.size();
  Shape in_strides = ContiguousStrides(shape);
  Shape out_shape(rank);
  for (size_t i = 0; i < rank; ++i) out_shape[i] = shape[perm[i]];
  Shape index(rank, 0);
  const int64_t n = NumElements(shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += index[d] * in_strides[perm[d]];
    y[flat] = x[src];
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
}

void ReferenceBackend::Gather(const float* table, int64_t cols, const int32_t* ids, int64_t n,
                              float* out) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < cols; ++c) out[i * cols + c] = table[ids[i] * cols + c];
}

void ReferenceBackend::ScatterAdd(const float* d_out, int64_t cols, const int32_t* ids,
                                  int64_t n, float* d_table) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < cols; ++c) d_table[ids[i] * cols + c] += d_out[i * cols + c];
}

void ReferenceBackend::CrossEntropy(const float* logits, const int32_t* targets, int64_t rows,
                                    int64_t cols, int32_t ignore_index, float label_smoothing,
                                    float* loss, float* probs, float* mean_loss) {
  Softmax(logits, probs, rows, cols);
  int64_t counted = 0;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    if (targets[r] == ignore_index) {
      loss[r] = 0.0f;
      continue;
    }
    const float* lr = logits + r * cols;
    float max = lr[0];
    for (int64_t c = 1; c < cols; ++c) max = std::max(max, lr[c]);
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(lr[c] - max));
    double log_z = max + std::log(sum);
    // Smoothed target: (1 - eps) one-hot + eps / cols uniform (as PyTorch).
    double nll = log_z - lr[targets[r]];
    double mean_nll = 0.0;
    for (int64_t c = 0; c < cols; ++c) mean_nll += log_z - lr[c];
    mean_nll /= cols;
    loss[r] = static_cast<float>((1.0 - label_smoothing) * nll + label_smoothing * mean_nll);
    ++counted;
  }
  for (int64_t r = 0; r < rows; ++r) total += loss[r];
  const float denom = static_cast<float>(std::max<int64_t>(counted, 1));
  *mean_loss = static_cast<float>(total / denom);
}

namespace {
int64_t CountedRows(const int32_t* targets, int64_t rows, int32_t ignore_index) {
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; ++r) counted += targets[r] != ignore_index;
  return counted;
}
}  // namespace

void ReferenceBackend::CrossEntropyBackward(const float* probs, const int32_t* targets,
                                            int64_t rows, int64_t cols, int32_t ignore_index,
                                            float label_smoothing, const float* dloss,
                                            float* dlogits) {
  const float scale =
      dloss[0] / static_cast<float>(std::max<int64_t>(CountedRows(targets, rows, ignore_index), 1));
  for (int64_t r = 0; r < rows; ++r) {
    float* dr = dlogits + r * cols;
    if (targets[r] == ignore_index) {
      for (int64_t c = 0; c < cols; ++c) dr[c] = 0.0f;
      continue;
    }
    for (int64_t c = 0; c < cols; ++c) {
      float target = label_smoothing / cols + (c == targets[r] ? 1.0f - label_smoothing : 0.0f);
      dr[c] = scale * (probs[r * cols + c] - target);
    }
  }
}

void ReferenceBackend::RotaryTables(int64_t offset, int64_t t, int64_t d, double base,
                                    float* cos, float* sin) {
  const int64_t half = d / 2;
  for (int64_t p = 0; p < t; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(offset + p) *
                           std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      cos[p * half + i] = static_cast<float>(std::cos(angle));
      sin[p * half + i] = static_cast<float>(std::sin(angle));
    }
}

void ReferenceBackend::SinusoidalTable(int64_t offset, int64_t t, int64_t c, double base,
                                       float* out) {
  for (int64_t p = 0; p < t; ++p)
    for (int64_t i = 0; i < c; i += 2) {
      const double angle =
          static_cast<double>(offset + p) / std::pow(base, static_cast<double>(i) / c);
      out[p * c + i] = static_cast<float>(std::sin(angle));
      out[p * c + i + 1] = static_cast<float>(std::cos(angle));
    }
}

void ReferenceBackend::AlibiBias(const std::vector<double>& slopes, int64_t q_offset, int64_t t,
                                 int64_t s, float* out) {
  const int64_t heads = static_cast<int64_t>(slopes.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j)
        out[(h * t + i) * s + j] = static_cast<float>(-slopes[h] * std::llabs(q_offset + i - j));
}

void ReferenceBackend::ArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c)
      if (xr[c] > xr[best]) best = c;
    out[r] = static_cast<int32_t>(best);
  }
}

void ReferenceBackend::DropoutMask(const RngStream& stream, float p, float* mask, int64_t n) {
  std::vector<uint32_t> words;
  DropoutFactors(stream, p, 0, n, mask, words);
}

void ReferenceBackend::SumSquares(const float* x, int64_t n, double* acc) {
  double sum = *acc;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  *acc = sum;
}

void ReferenceBackend::Copy2D(const float* src, int64_t src_stride, float* dst,
                              int64_t dst_stride, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    std::copy(src + r * src_stride, src + r * src_stride + cols, dst + r * dst_stride);
}

void ReferenceBackend::AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
                             const AdamWHyper& h) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(h.step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(h.step));
  const float step_size = static_cast<float>(h.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  for (int64_t i = 0; i < n; ++i) {
    param[i] *= 1.0f - h.lr * h.weight_decay;
    m[i] = h.beta1 * m[i] + (1.0f - h.beta1) * grad[i];
    v[i] = h.beta2 * v[i] + (1.0f - h.beta2) * grad[i] * grad[i];
    float denom = std::sqrt(v[i]) / bc2_sqrt + h.eps;
    param[i] -= step_size * m[i] / denom;
  }
}

namespace {
std::unique_ptr<Backend> MakeReference() { return std::make_unique<ReferenceBackend>(); }
const bool kRegistered = RegisterBackend("reference", &MakeReference);
}  // namespace

}  // namespace tvlab
