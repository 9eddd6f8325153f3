#ifndef TVLAB_FRAMEWORK_BACKEND_REFERENCE_REFERENCE_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_REFERENCE_REFERENCE_BACKEND_H_

// Plain loops, written for clarity, not speed: the oracle that every other
// backend is tested against. Faster backends derive from it and override the
// kernels they accelerate.

#include "framework/backend/backend.h"

namespace tvlab {

class ReferenceBackend : public Backend {
 public:
  std::string name() const override { return "reference"; }
  bool Implements(Kernel) const override { return true; }
  // Every precision: bf16 and tf32 round the GEMM operands (precision.h).
  bool SupportsPrecision(Precision) const override { return true; }
  void Gemm(const GemmDesc& d, const float* a, const float* b, float* c) override;
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
                    int32_t ignore_index, float label_smoothing, float* loss,
                    float* probs, float* mean_loss) override;
  void CrossEntropyBackward(const float* probs, const int32_t* targets, int64_t rows,
                            int64_t cols, int32_t ignore_index, float label_smoothing,
                            const float* dloss, float* dlogits) override;
  void ArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out) override;
  void DropoutMask(const RngStream& stream, float p, float* mask, int64_t n) override;
  void SumSquares(const float* x, int64_t n, double* acc) override;
  void AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
             const AdamWHyper& h) override;
  // reference_fused_attention.cc
  void FusedAttention(const FusedAttentionDesc& d, const float* q, const float* k,
                      const float* v, float* out, float* lse) override;
  void FusedAttentionBackward(const FusedAttentionDesc& d, const float* q, const float* k,
                              const float* v, const float* out, const float* lse,
                              const float* dout, float* dq, float* dk, float* dv) override;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_REFERENCE_REFERENCE_BACKEND_H_
