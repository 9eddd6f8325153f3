// The bodies of kernels.def's Composed kernels: each computed from other
// kernels of the same backend. A backend may override one with a fused
// kernel that gives the same results.

#include "framework/backend/backend.h"
#include "framework/core/check.h"

namespace tvlab {

void CheckGemmBiasDesc(const GemmDesc& d) {
  TVLAB_CHECK(d.alpha == 1.0f && d.beta == 0.0f && (d.batch == 1 || d.stride_c == d.m * d.n))
      << "GemmBias takes alpha 1, beta 0 and a contiguous c (alpha " << d.alpha << ", beta "
      << d.beta << ", stride_c " << d.stride_c << " for " << d.m << " x " << d.n << ")";
}

void Backend::GemmBias(const GemmDesc& d, const float* a, const float* b, const float* bias,
                       float* c) {
  CheckGemmBiasDesc(d);
  Gemm(d, a, b, c);
  const Shape rows_n = {d.batch * d.m, d.n};
  Binary(BinaryOp::kAdd, c, rows_n, bias, {d.n}, c, rows_n);  // (rows, n) + (n)
}

void CheckGemmAndColumnSumsDesc(const GemmDesc& d) {
  TVLAB_CHECK(d.trans_a && d.batch == 1 && d.alpha == 1.0f && d.beta == 0.0f)
      << "GemmAndColumnSums takes A transposed, batch 1, alpha 1 and beta 0 (trans_a " << d.trans_a << ", batch "
      << d.batch << ", alpha " << d.alpha << ", beta " << d.beta << ")";
}

void Backend::GemmAndColumnSums(const GemmDesc& d, const float* a, const float* b, float* c,
                                float* a_column_sums) {
  CheckGemmAndColumnSumsDesc(d);
  Gemm(d, a, b, c);
  ReduceSumTo(a, {d.k, d.m}, a_column_sums, {d.m});  // a (k, m) -> (m)
}

void Backend::NormalizeBackwardAdd(const float* x, const float* gamma, const float* mean, const float* rstd,
                                   const float* dy, const float* addend, float* dx, float* dgamma, float* dbeta,
                                   int64_t rows, int64_t cols, bool subtract_mean) {
  TVLAB_CHECK(addend != nullptr && addend != dx) << "NormalizeBackwardAdd: a null addend, or dx aliasing it";
  NormalizeBackward(x, gamma, mean, rstd, dy, dx, dgamma, dbeta, rows, cols, subtract_mean);
  const Shape rows_cols = {rows, cols};
  Binary(BinaryOp::kAdd, addend, rows_cols, dx, rows_cols, dx, rows_cols);  // addend + dx, as autograd adds
}

void Backend::AdamWMany(const std::vector<AdamWTensor>& tensors, const AdamWHyper& h) {
  for (const AdamWTensor& t : tensors) {
    AdamWHyper own = h;
    own.weight_decay = t.weight_decay;
    AdamW(t.param, t.grad, t.m, t.v, t.n, own);
  }
}

void Backend::PointwiseChain(const std::vector<PointwiseStep>& steps, int64_t n) {
  const Shape flat = {n};
  for (const PointwiseStep& s : steps) {
    switch (s.kind) {
      case PointwiseStep::Kind::kBinary: Binary(s.op, s.a, flat, s.b, flat, s.out, flat); break;
      case PointwiseStep::Kind::kRelu: Unary(UnaryOp::kRelu, s.a, s.out, n); break;
      case PointwiseStep::Kind::kReluBackward: UnaryBackward(UnaryOp::kRelu, s.a, s.b, s.c, s.out, n); break;
      case PointwiseStep::Kind::kDropoutMask:
        TVLAB_CHECK(s.stream.has_value()) << "PointwiseChain: a dropout step without its stream";
        TVLAB_CHECK(s.kept == nullptr) << "PointwiseChain: mask bits on a backend that keeps none (KeepsMaskBits)";
        DropoutMask(*s.stream, s.p, s.out, n);
        break;
      case PointwiseStep::Kind::kKeptMask:
        TVLAB_CHECK(false) << "PointwiseChain: a kept mask on a backend that keeps none (KeepsMaskBits)";
        break;
    }
  }
}

}  // namespace tvlab
