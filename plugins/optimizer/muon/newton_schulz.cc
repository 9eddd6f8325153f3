#include "plugins/optimizer/muon/newton_schulz.h"

#include <cmath>

#include "framework/backend/backend.h"
#include "framework/tensor/device_memory.h"

namespace tvlab {
namespace {

// |x|_F over n elements: the backend's SumSquares into one double on the
// device, read back (one scalar per matrix and step).
double FrobeniusNorm(const Tensor& x) {
  DeviceInts acc = DeviceInts::Empty(2);  // 8 bytes, used as one double
  double sum = 0.0;
  AllocatorFor(acc.device()).memory().CopyFromHost(&sum, acc.ptr(), sizeof(double));
  CurrentBackend().SumSquares(x.ptr(), x.numel(), reinterpret_cast<double*>(acc.ptr()));
  AllocatorFor(acc.device()).memory().CopyToHost(acc.ptr(), &sum, sizeof(double));
  return std::sqrt(sum);
}

// c = alpha * op(a) @ op(b) + beta * c, single precision, one matrix.
void Gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor* c, int64_t m, int64_t n,
          int64_t k, float alpha, float beta) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k, d.trans_a = trans_a, d.trans_b = trans_b, d.alpha = alpha, d.beta = beta;
  CurrentBackend().Gemm(d, a.ptr(), b.ptr(), c->ptr());
}

// A copy of x times the scalar s.
Tensor Scaled(const Tensor& x, float s) {
  Tensor out = Tensor::Empty(x.shape());
  const Tensor scalar = Tensor::Scalar(s);
  CurrentBackend().Binary(BinaryOp::kMul, x.ptr(), x.shape(), scalar.ptr(), {}, out.ptr(), x.shape());
  return out;
}

}  // namespace

Tensor NewtonSchulz(const Tensor& g, int64_t rows, int64_t cols, int steps) {
  constexpr float a = 3.4445f, b = -4.7750f, c = 2.0315f;
  Tensor x = Scaled(g, static_cast<float>(1.0 / (FrobeniusNorm(g) + 1e-7)));  // (rows, cols)
  const bool wide = rows <= cols;
  const int64_t s = wide ? rows : cols;  // A and B are (s, s)
  Tensor A = Tensor::Empty({s, s}), B = Tensor::Empty({s, s});
  for (int i = 0; i < steps; ++i) {
    // A = X X^T (wide) or X^T X: (s, s)
    if (wide) {
      Gemm(x, false, x, true, &A, s, s, cols, 1.0f, 0.0f);
    } else {
      Gemm(x, true, x, false, &A, s, s, rows, 1.0f, 0.0f);
    }
    B = Scaled(A, b);
    Gemm(A, false, A, false, &B, s, s, s, c, 1.0f);  // B = b A + c A A
    Tensor next = Scaled(x, a);                      // (rows, cols)
    if (wide) {
      Gemm(B, false, x, false, &next, rows, cols, rows, 1.0f, 1.0f);  // a X + B X
    } else {
      Gemm(x, false, B, false, &next, rows, cols, cols, 1.0f, 1.0f);  // a X + X B
    }
    x = next;
  }
  return x;
}

}  // namespace tvlab
