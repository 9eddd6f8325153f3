#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_ELEMENTWISE_KERNELS_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_ELEMENTWISE_KERNELS_H_

// Launchers of the elementwise kernels (Backend::Unary, UnaryBackward,
// Binary), on the default stream. Each returns the CUDA error code of its
// launch (0 = success); the backend checks it. Plain C++ types only, so that
// gpu_cuda_backend.cc (host compiler) and the .cu (nvcc) share the header.

#include <cstdint>

namespace tvlab {

// The same ops, in the same meaning, as tvlab::UnaryOp / BinaryOp
// (gpu_cuda_backend.cc maps one onto the other by name).
enum class GpuUnary { kRelu, kGeluErf, kGeluTanh, kSilu, kSigmoid, kTanh, kExp, kLog, kSqrt, kSquare };
enum class GpuBinary { kAdd, kSub, kMul, kDiv };

constexpr int kMaxGpuRank = 8;  // broadcasting / permutation rank the kernels take

// y = f(x), n elements; x and y may alias.
int LaunchUnary(GpuUnary op, const float* x, float* y, int64_t n);
// dx = dy * f'(x), given y = f(x).
int LaunchUnaryBackward(GpuUnary op, const float* x, const float* y, const float* dy, float* dx,
                        int64_t n);

// Fast path of broadcasting where each operand's shape is a suffix of the
// output's (same shape, a row vector, a scalar): out[i] = a[i % na] op b[i % nb].
int LaunchBinarySuffix(GpuBinary op, const float* a, int64_t na, const float* b, int64_t nb,
                       float* out, int64_t n);

// General NumPy broadcasting: out (rank dims, row-major, n elements); an
// operand's stride is 0 in the dimensions where it broadcasts.
struct BroadcastIndex {
  int rank = 0;
  int64_t out_size[kMaxGpuRank] = {};
  int64_t a_stride[kMaxGpuRank] = {};
  int64_t b_stride[kMaxGpuRank] = {};
};
int LaunchBinaryStrided(GpuBinary op, const float* a, const float* b, float* out,
                        const BroadcastIndex& index, int64_t n);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_ELEMENTWISE_KERNELS_H_
