// ReferenceBackend::Gemm: plain loops with products summed in double; bf16
// and tf32 round the operands first (precision.h).

#include <vector>

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

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

}  // namespace tvlab
