// ReferenceBackend's elementwise kernels: Unary and its backward, Binary
// with NumPy broadcasting, and ReduceSumTo (the backward of broadcasting).

#include <cmath>
#include <type_traits>
#include <vector>

#include "framework/backend/reference/reference_backend.h"
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

}  // namespace tvlab
