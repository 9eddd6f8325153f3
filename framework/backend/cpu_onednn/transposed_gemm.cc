// cpu_onednn's routes for the A-transposed products that oneDNN 2.6 runs
// slowly without AVX-512 (transposed_gemm.h): A copied into rows first, or
// the product computed transposed (its operands swapped) and copied back.

#include "framework/backend/cpu_onednn/transposed_gemm.h"

#include "framework/backend/cpu_onednn/onednn_backend.h"

namespace tvlab {

using dnnl::memory;
using dt = memory::data_type;

bool onednn::TransposesAFirst(const GemmDesc& d, bool cpu_has_avx512_core) {
  return !cpu_has_avx512_core && d.trans_a && d.batch == 1 && d.precision == Precision::kFp32 &&
         d.k > 0 && d.m >= kTransposeFirstMinRows && d.n >= kTransposeFirstMinCols &&
         d.n <= kTransposeFirstMaxCols;
}

GemmDesc onednn::SwappedProduct(const GemmDesc& d) {
  GemmDesc s = d;  // C^T (n, m) = B^T (n, k) @ A (k, m): B read transposed, A as stored
  s.m = d.n, s.n = d.m;
  s.trans_a = true, s.trans_b = false;
  s.stride_a = s.stride_b = s.stride_c = 0;
  return s;
}

bool onednn::SwapsOperands(const GemmDesc& d, bool cpu_has_avx512_core) {
  return d.trans_a && !d.trans_b && d.batch == 1 && d.beta == 0.0f &&
         d.m <= kSwapMaxRows && TransposesAFirst(SwappedProduct(d), cpu_has_avx512_core);
}

// dst (rows, cols) in rows = src, the same matrix stored by columns (an exact
// copy; one cached oneDNN reorder per shape).
void OnednnBackend::CopyColumnsToRows(int64_t rows, int64_t cols, const float* src, float* dst) {
  const memory::desc by_columns({rows, cols}, dt::f32, memory::dims{1, rows});
  const memory::desc by_rows({rows, cols}, dt::f32, memory::dims{cols, 1});
  auto it = transposes_.find({rows, cols});
  if (it == transposes_.end()) {
    dnnl::reorder::primitive_desc pd(engine_, by_columns, engine_, by_rows);
    it = transposes_.emplace(std::make_pair(rows, cols), dnnl::reorder(pd)).first;
  }
  memory from(by_columns, engine_, const_cast<float*>(src)), to(by_rows, engine_, dst);
  it->second.execute(stream_, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  stream_.wait();
}

void OnednnBackend::MatmulTransposingAFirst(const GemmDesc& d, const float* a, const float* b,
                                            const float* bias, float* c) {
  // a holds A (m, k) by columns (A^T's rows); a_rows_ gets it by rows.
  if (static_cast<int64_t>(a_rows_.size()) < d.m * d.k) a_rows_.resize(d.m * d.k);
  CopyColumnsToRows(d.m, d.k, a, a_rows_.data());
  GemmDesc in_rows = d;
  in_rows.trans_a = false;
  Matmul(in_rows, a_rows_.data(), b, /*bias=*/bias, c);
}

void OnednnBackend::MatmulSwappingOperands(const GemmDesc& d, const float* a, const float* b,
                                           float* c) {
  // C^T (n, m) = B^T A with B (k, n) read transposed and A (k, m) as stored:
  // the swapped product, itself copied into rows first (TransposesAFirst).
  if (static_cast<int64_t>(c_columns_.size()) < d.m * d.n) c_columns_.resize(d.m * d.n);
  Matmul(onednn::SwappedProduct(d), b, a, /*bias=*/nullptr, c_columns_.data());
  CopyColumnsToRows(d.m, d.n, c_columns_.data(), c);  // C (m, n) by columns is C^T by rows
}

}  // namespace tvlab
