// Elementwise kernels: unary ops and their derivatives (the formulas of
// reference_backend.cc, in float, with CUDA's accurate libm: erff, tanhf,
// expf), and binary ops with NumPy broadcasting. Grid-stride loops, one
// element per thread per iteration.

#include <cuda_runtime.h>

#include <type_traits>

#include "framework/backend/gpu_cuda/elementwise_kernels.h"
#include "framework/backend/gpu_cuda/kernel_util.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"

namespace tvlab {
namespace {

using cuda_util::GlobalIndex;
using cuda_util::GridFor;
using cuda_util::GridStride;
using cuda_util::kThreads;

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

template <GpuUnary kOp>
__device__ __forceinline__ float Forward(float x) {
  switch (kOp) {
    case GpuUnary::kRelu: return x > 0 ? x : 0.0f;
    case GpuUnary::kGeluErf: return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
    case GpuUnary::kGeluTanh:
      return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    case GpuUnary::kSilu: return x / (1.0f + expf(-x));
    case GpuUnary::kSigmoid: return 1.0f / (1.0f + expf(-x));
    case GpuUnary::kTanh: return tanhf(x);
    case GpuUnary::kExp: return expf(x);
    case GpuUnary::kLog: return logf(x);
    case GpuUnary::kSqrt: return sqrtf(x);
    case GpuUnary::kSquare: return x * x;
  }
  return 0.0f;
}

// d f(x) / dx given x and y = f(x).
template <GpuUnary kOp>
__device__ __forceinline__ float Derivative(float x, float y) {
  switch (kOp) {
    case GpuUnary::kRelu: return x > 0 ? 1.0f : 0.0f;
    case GpuUnary::kGeluErf: {
      const float cdf = 0.5f * (1.0f + erff(x * kInvSqrt2));
      const float pdf = expf(-0.5f * x * x) * kInvSqrt2Pi;
      return cdf + x * pdf;
    }
    case GpuUnary::kGeluTanh: {
      const float inner = kSqrt2OverPi * (x + 0.044715f * x * x * x);
      const float t = tanhf(inner);
      const float dinner = kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x);
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner;
    }
    case GpuUnary::kSilu: {
      const float s = 1.0f / (1.0f + expf(-x));
      return s * (1.0f + x * (1.0f - s));
    }
    case GpuUnary::kSigmoid: return y * (1.0f - y);
    case GpuUnary::kTanh: return 1.0f - y * y;
    case GpuUnary::kExp: return y;
    case GpuUnary::kLog: return 1.0f / x;
    case GpuUnary::kSqrt: return 0.5f / y;
    case GpuUnary::kSquare: return 2.0f * x;
  }
  return 0.0f;
}

template <GpuUnary kOp>
__global__ void UnaryKernel(const float* x, float* y, int64_t n) {
  for (int64_t i = GlobalIndex(); i < n; i += GridStride()) y[i] = Forward<kOp>(x[i]);
}

template <GpuUnary kOp>
__global__ void UnaryBackwardKernel(const float* x, const float* y, const float* dy, float* dx,
                                    int64_t n) {
  for (int64_t i = GlobalIndex(); i < n; i += GridStride())
    dx[i] = dy[i] * Derivative<kOp>(x[i], y[i]);
}

template <GpuBinary kOp>
__device__ __forceinline__ float Apply(float a, float b) {
  switch (kOp) {
    case GpuBinary::kAdd: return a + b;
    case GpuBinary::kSub: return a - b;
    case GpuBinary::kMul: return a * b;
    case GpuBinary::kDiv: return a / b;
  }
  return 0.0f;
}

// Same shape on both sides (na == nb == n) skips the modulo.
template <GpuBinary kOp>
__global__ void BinarySameShapeKernel(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = GlobalIndex(); i < n; i += GridStride()) out[i] = Apply<kOp>(a[i], b[i]);
}

template <GpuBinary kOp>
__global__ void BinarySuffixKernel(const float* a, int64_t na, const float* b, int64_t nb,
                                   float* out, int64_t n) {
  for (int64_t i = GlobalIndex(); i < n; i += GridStride())
    out[i] = Apply<kOp>(a[na == n ? i : i % na], b[nb == n ? i : i % nb]);
}

template <GpuBinary kOp>
__global__ void BinaryStridedKernel(const float* a, const float* b, float* out,
                                    BroadcastIndex index, int64_t n) {
  for (int64_t i = GlobalIndex(); i < n; i += GridStride()) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      const int64_t coord = rest % index.out_size[d];
      rest /= index.out_size[d];
      ia += coord * index.a_stride[d];
      ib += coord * index.b_stride[d];
    }
    out[i] = Apply<kOp>(a[ia], b[ib]);
  }
}

// Runs `launch` with the op as a template argument (one kernel per op, the
// switch outside the element loop).
template <typename Launch>
void DispatchUnary(GpuUnary op, Launch launch) {
  switch (op) {
#define TVLAB_UNARY_CASE(k) \
  case GpuUnary::k: launch(std::integral_constant<GpuUnary, GpuUnary::k>()); return;
    TVLAB_UNARY_CASE(kRelu) TVLAB_UNARY_CASE(kGeluErf) TVLAB_UNARY_CASE(kGeluTanh)
    TVLAB_UNARY_CASE(kSilu) TVLAB_UNARY_CASE(kSigmoid) TVLAB_UNARY_CASE(kTanh)
    TVLAB_UNARY_CASE(kExp) TVLAB_UNARY_CASE(kLog) TVLAB_UNARY_CASE(kSqrt)
    TVLAB_UNARY_CASE(kSquare)
#undef TVLAB_UNARY_CASE
  }
}

template <typename Launch>
void DispatchBinary(GpuBinary op, Launch launch) {
  switch (op) {
    case GpuBinary::kAdd: launch(std::integral_constant<GpuBinary, GpuBinary::kAdd>()); return;
    case GpuBinary::kSub: launch(std::integral_constant<GpuBinary, GpuBinary::kSub>()); return;
    case GpuBinary::kMul: launch(std::integral_constant<GpuBinary, GpuBinary::kMul>()); return;
    case GpuBinary::kDiv: launch(std::integral_constant<GpuBinary, GpuBinary::kDiv>()); return;
  }
}

}  // namespace

int LaunchUnary(GpuUnary op, const float* x, float* y, int64_t n) {
  if (n <= 0) return 0;
  DispatchUnary(op, [&](auto k) {
    TVLAB_LAUNCH(GridFor(n), kThreads, 0, 0, UnaryKernel<decltype(k)::value>)(x, y, n);
  });
  return static_cast<int>(cudaGetLastError());
}

int LaunchUnaryBackward(GpuUnary op, const float* x, const float* y, const float* dy, float* dx,
                        int64_t n) {
  if (n <= 0) return 0;
  DispatchUnary(op, [&](auto k) {
    TVLAB_LAUNCH(GridFor(n), kThreads, 0, 0, UnaryBackwardKernel<decltype(k)::value>)(
        x, y, dy, dx, n);
  });
  return static_cast<int>(cudaGetLastError());
}

int LaunchBinarySuffix(GpuBinary op, const float* a, int64_t na, const float* b, int64_t nb,
                       float* out, int64_t n) {
  if (n <= 0) return 0;
  DispatchBinary(op, [&](auto k) {
    if (na == n && nb == n)
      TVLAB_LAUNCH(GridFor(n), kThreads, 0, 0, BinarySameShapeKernel<decltype(k)::value>)(
          a, b, out, n);
    else
      TVLAB_LAUNCH(GridFor(n), kThreads, 0, 0, BinarySuffixKernel<decltype(k)::value>)(
          a, na, b, nb, out, n);
  });
  return static_cast<int>(cudaGetLastError());
}

int LaunchBinaryStrided(GpuBinary op, const float* a, const float* b, float* out,
                        const BroadcastIndex& index, int64_t n) {
  if (n <= 0) return 0;
  DispatchBinary(op, [&](auto k) {
    TVLAB_LAUNCH(GridFor(n), kThreads, 0, 0, BinaryStridedKernel<decltype(k)::value>)(
        a, b, out, index, n);
  });
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
