#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_

// GPU backend, built only under --config=cuda. Tensors live in device memory
// (Device::kCuda, cudaMalloc behind the caching allocator; copies and fills
// through cudaMemcpy and a fill kernel). GEMM goes through cuBLAS
// (cublas_gemm.cc: cublasSgemmStridedBatched, or cublasGemmStridedBatchedEx
// for runtime.precision tf32/bf16); every other kernel is CUDA:
// gpu_cuda/*_kernels.cu (docs/architecture.md, "The GPU backend's kernels"),
// the dropout mask (Philox on the device, philox.cuh: the CPU backends' mask
// bit for bit) and fused attention forward and backward (flash-attention
// style, fused_attention_device.cuh; docs/gpu.md). All run on the default
// stream, the one stream of this backend (cuBLAS and the copies use it too),
// with the launch status checked. No kernel reads a value back to the host;
// reductions that need scratch take it from the caching allocator.
//
// Debugging: TVLAB_CUDA_SYNC=1 in the environment synchronises after every
// kernel, so an asynchronous fault is reported by the kernel that caused it.
// Its kernels are tested against the reference backend on a machine with a
// GPU (backend_conformance_test, gpu_cuda_kernels_test, gpu_cuda_backend_test)
// and skip cleanly without one. In every build the same sources also run on
// the CPU under an emulator of CUDA (gpu_cuda/emulator/: the *_emulated_*
// tests and tests:gpu_cuda_model_emulated_test), and philox.cuh against
// RngStream (philox_host_test). Compiled and reviewed; not yet run on a GPU.

#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/gpu_cuda/cublas_gemm.h"

namespace tvlab {

// Whether a CUDA device is usable; `why` explains when not.
bool CudaDeviceAvailable(std::string* why);

class GpuCudaBackend : public Backend {
 public:
  GpuCudaBackend();
  ~GpuCudaBackend() override;
  std::string name() const override { return "gpu_cuda"; }
  Device device() const override { return Device::kCuda; }
  bool Implements(Kernel kernel) const override;
  // fp32, tf32 and bf16 on GPUs of compute capability 8.0 or later (tensor
  // cores with TF32 and bf16); fp32 only before (cublas_gemm.h).
  bool SupportsPrecision(Precision precision) const override;
  std::string PrecisionNote(Precision precision) const override;
  void Gemm(const GemmDesc& d, const float* a, const float* b, float* c) override;
  // The bias written into every row of c, then the GEMM with beta 1: the
  // bias enters in cuBLAS's epilogue (which reads c anyway) instead of a
  // second kernel's pass over c.
  void GemmBias(const GemmDesc& d, const float* a, const float* b, const float* bias,
                float* c) override;
  void AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
             const AdamWHyper& h) override;
  // Philox on the device (philox.cuh): the CPU backends' mask bit for bit.
  void DropoutMask(const RngStream& stream, float p, float* mask, int64_t n) override;
  // Flash-attention-style kernels (fused_attention_kernel.cu).
  void FusedAttention(const FusedAttentionDesc& d, const float* q, const float* k,
                      const float* v, float* out, float* lse) override;
  void FusedAttentionBackward(const FusedAttentionDesc& d, const float* q, const float* k,
                              const float* v, const float* out, const float* lse,
                              const float* dout, float* dq, float* dk, float* dv) override;

  // gpu_cuda_ops.cc: host-side shape handling and launches of the kernels
  // in gpu_cuda/*_kernels.cu.
  void Unary(UnaryOp op, const float* x, float* y, int64_t n) override;
  void UnaryBackward(UnaryOp op, const float* x, const float* y, const float* dy, float* dx,
                     int64_t n) override;
  void Binary(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
              const Shape& b_shape, float* out, const Shape& out_shape) override;
  void ReduceSumTo(const float* x, const Shape& x_shape, float* out,
                   const Shape& out_shape) override;
  void Softmax(const float* x, float* y, int64_t rows, int64_t cols) override;
  void SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                       int64_t cols) override;
  void AttentionMaskBias(const AttentionMask& mask, int64_t t, int64_t s, float* out) override;
  void RotaryTables(int64_t offset, int64_t t, int64_t d, double base, float* cos,
                    float* sin) override;
  void SinusoidalTable(int64_t offset, int64_t t, int64_t c, double base, float* out) override;
  void AlibiBias(const std::vector<double>& slopes, int64_t q_offset, int64_t t, int64_t s,
                 float* out) override;
  void Normalize(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                 float* rstd, int64_t rows, int64_t cols, float eps,
                 bool subtract_mean) override;
  void NormalizeBackward(const float* x, const float* gamma, const float* mean,
                         const float* rstd, const float* dy, float* dx, float* dgamma,
                         float* dbeta, int64_t rows, int64_t cols, bool subtract_mean) override;
  void Permute(const float* x, const Shape& shape, const std::vector<int>& perm,
               float* y) override;
  void Copy2D(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows,
              int64_t cols) override;
  void Gather(const float* table, int64_t cols, const int32_t* ids, int64_t n,
              float* out) override;
  void ScatterAdd(const float* d_out, int64_t cols, const int32_t* ids, int64_t n,
                  float* d_table) override;
  void CrossEntropy(const float* logits, const int32_t* targets, int64_t rows, int64_t cols,
                    int32_t ignore_index, float label_smoothing, float* loss, float* probs,
                    float* mean_loss) override;
  void CrossEntropyBackward(const float* probs, const int32_t* targets, int64_t rows,
                            int64_t cols, int32_t ignore_index, float label_smoothing,
                            const float* dloss, float* dlogits) override;
  void ArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out) override;
  void SumSquares(const float* x, int64_t n, double* acc) override;

 private:
  void* cublas_ = nullptr;  // cublasHandle_t
  int compute_capability_major_ = 0;
  Bf16Scratch bf16_scratch_;  // bf16 copies of GEMM operands (cublas_gemm.h)
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_
