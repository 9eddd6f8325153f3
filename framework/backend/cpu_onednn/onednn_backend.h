#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_ONEDNN_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_ONEDNN_BACKEND_H_

// CPU backend on oneDNN 2.6: matmul, eltwise and layer normalization run as
// oneDNN primitives, created once per shape and cached. Kernels oneDNN has no
// primitive for (masked softmax with all-masked rows, broadcasting binary
// ops, LayerNorm/RMSNorm backward, permutes, AdamW) are tuned loops here,
// run by OpenMP threads above a size threshold (kParallelElements). Every
// kernel is tested against ReferenceBackend in backend_conformance_test.cc
// (small sizes, one thread) and tests/onednn_large_kernels_test.cc (sizes
// above the threshold, two threads).

#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "framework/backend/reference/reference_backend.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace tvlab {

class OnednnBackend : public ReferenceBackend {
 public:
  OnednnBackend();
  std::string name() const override { return "cpu_onednn"; }

  // fp32; bf16 where oneDNN can create a bf16 matmul on this CPU (natively
  // with AVX512_BF16/AMX, emulated on AVX512_CORE); never tf32 (a GPU format).
  bool SupportsPrecision(Precision precision) const override;
  std::string PrecisionNote(Precision precision) const override;
  // bf16: both operands are rounded into reused scratch buffers (a16_, b16_)
  // and multiplied by a oneDNN matmul with bf16 source and weights and an
  // f32 destination (fp32 accumulation).
  void Gemm(const GemmDesc& d, const float* a, const float* b, float* c) override;
  void GemmBias(const GemmDesc& d, const float* a, const float* b, const float* bias,
                float* c) override;
  void Unary(UnaryOp op, const float* x, float* y, int64_t n) override;
  // GELU, SiLU and ReLU on oneDNN's eltwise backward; the rest as reference.
  void UnaryBackward(UnaryOp op, const float* x, const float* y, const float* dy, float* dx,
                     int64_t n) override;
  void Binary(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
              const Shape& b_shape, float* out, const Shape& out_shape) override;
  void ReduceSumTo(const float* x, const Shape& x_shape, float* out,
                   const Shape& out_shape) override;
  void Softmax(const float* x, float* y, int64_t rows, int64_t cols) override;
  void SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                       int64_t cols) override;
  void Normalize(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                 float* rstd, int64_t rows, int64_t cols, float eps,
                 bool subtract_mean) override;
  void NormalizeBackward(const float* x, const float* gamma, const float* mean,
                         const float* rstd, const float* dy, float* dx, float* dgamma,
                         float* dbeta, int64_t rows, int64_t cols, bool subtract_mean) override;
  void Permute(const float* x, const Shape& shape, const std::vector<int>& perm,
               float* y) override;
  void AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
             const AdamWHyper& h) override;
  void AdamWMany(const std::vector<AdamWTensor>& tensors, const AdamWHyper& h) override;
  // tiled_attention.h
  void FusedAttention(const FusedAttentionDesc& d, const float* q, const float* k,
                      const float* v, float* out, float* lse) override;
  void FusedAttentionBackward(const FusedAttentionDesc& d, const float* q, const float* k,
                              const float* v, const float* out, const float* lse,
                              const float* dout, float* dq, float* dk, float* dv) override;

 private:
  using GemmKey = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t,
                             int64_t, float, float, int, bool>;  // ..., precision, has bias
  // One matmul primitive per shape (cached); bias (n) or null.
  void Matmul(const GemmDesc& d, const float* a, const float* b, const float* bias, float* c);
  using EltwiseKey = std::tuple<int, int64_t>;
  using NormKey = std::tuple<int64_t, int64_t, float, bool, bool>;

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<GemmKey, dnnl::matmul> matmuls_;
  std::vector<uint16_t> a16_, b16_;  // bf16 GEMM operands; they only grow
  std::map<EltwiseKey, dnnl::eltwise_forward> eltwise_;
  std::map<EltwiseKey, dnnl::eltwise_backward> eltwise_backward_;
  std::map<NormKey, dnnl::layer_normalization_forward> norms_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_ONEDNN_BACKEND_H_
