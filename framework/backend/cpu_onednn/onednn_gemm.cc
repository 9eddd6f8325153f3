// cpu_onednn's GEMMs: one cached oneDNN matmul primitive per shape, with
// the bias of GemmBias as the primitive's own argument and bf16 operands
// rounded into reused scratch buffers; batches of tiny fp32 products run
// small_gemm.h's loop instead, small models' Linear products
// medium_gemm.h's (bf16_medium_gemm.h's in bf16 on AVX512_BF16), the
// A-transposed products that transposed_gemm.h names take its routes
// (transposed_gemm.cc), and wide ones run in parts of 512 columns
// (column_parts.h).

#include <unordered_map>
#include <vector>

#include "framework/backend/cpu_onednn/bf16_medium_gemm.h"
#include "framework/backend/cpu_onednn/column_parts.h"
#include "framework/backend/cpu_onednn/medium_gemm.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/backend/cpu_onednn/small_gemm.h"
#include "framework/backend/cpu_onednn/transposed_gemm.h"
#include "framework/backend/precision.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;
using onednn::kParallelElements;
using onednn::kParallelGemmMacs;
using onednn::SingleThreaded;

// The elements an operand of `batch` matrices of `size` elements spans at
// `stride` (0: one matrix shared by the batch).
int64_t OperandSpan(int64_t batch, int64_t stride, int64_t size) {
  return stride == 0 || batch == 0 ? size : (batch - 1) * stride + size;
}

// dst[i] = the bf16 bits of src[i] (precision.h: nearest, ties to even), into
// a buffer that grows only.
void ToBf16(const float* src, int64_t n, std::vector<uint16_t>* dst) {
  if (static_cast<int64_t>(dst->size()) < n) dst->resize(n);
  uint16_t* out = dst->data();
  const bool parallel = n >= kParallelElements;
#pragma omp parallel for simd if (parallel : parallel) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = Bf16Bits(src[i]);
}

}  // namespace

void OnednnBackend::Gemm(const GemmDesc& d, const float* a, const float* b, float* c) {
  Matmul(d, a, b, /*bias=*/nullptr, c);
}

// The bias is the matmul primitive's own argument: added as the products are
// written, not in a second pass over c.
void OnednnBackend::GemmBias(const GemmDesc& d, const float* a, const float* b, const float* bias,
                             float* c) {
  CheckGemmBiasDesc(d);
  Matmul(d, a, b, bias, c);
}

// The small-model loop sums a's columns as it multiplies (medium_gemm.h:
// its ReduceSumTo's order, so the composition's bits), in fp32 or bf16
// (bf16_medium_gemm.h); elsewhere the composition.
void OnednnBackend::GemmAndColumnSums(const GemmDesc& d, const float* a, const float* b, float* c,
                                      float* a_column_sums) {
  CheckGemmAndColumnSumsDesc(d);
  if (onednn::IsMediumGemm(d, avx512_core_)) return onednn::MediumGemmAndColumnSums(d, a, b, c, a_column_sums);
  if (onednn::IsBf16MediumGemm(d)) return onednn::Bf16MediumGemmAndColumnSums(d, a, b, c, a_column_sums);
  Backend::GemmAndColumnSums(d, a, b, c, a_column_sums);
}

namespace {

// A batch of products that share B (stride_b 0), with A not transposed and
// A and C contiguous across the batch, is one product of batch * m rows: a
// Linear over (B, T, C) activations. oneDNN's batched matmul runs it as
// `batch` small products of m rows (m = T, often 8 or 16 here); one tall
// product is 2-4x faster at these sizes. Each output is the same dot
// product over k either way.
GemmDesc FlattenSharedB(const GemmDesc& d) {
  const bool flat = d.batch > 1 && d.stride_b == 0 && !d.trans_a && d.stride_a == d.m * d.k &&
                    (d.stride_c == d.m * d.n || d.stride_c == 0);
  if (!flat) return d;
  GemmDesc one = d;
  one.m = d.batch * d.m;
  one.batch = 1;
  one.stride_a = one.stride_c = 0;
  return one;
}

}  // namespace

void OnednnBackend::Matmul(const GemmDesc& desc, const float* a, const float* b, const float* bias,
                           float* c) {
  const GemmDesc d = FlattenSharedB(desc);
  TVLAB_CHECK(OnednnPrecisionSupport(d.precision).supported)
      << "cpu_onednn Gemm called with precision " << PrecisionName(d.precision)
      << " (validation should have refused it)";
  // Tiny batched products: a plain loop each (small_gemm.h).
  if (bias == nullptr && onednn::IsSmallBatchedGemm(d, avx512_core_)) return onednn::SmallBatchedGemm(d, a, b, c);
  // Small models' Linear products on AVX-512: sums in registers (medium_gemm.h).
  if (onednn::IsMediumGemm(d, avx512_core_)) return onednn::MediumGemm(d, a, b, bias, c);
  // Their bf16 products on CPUs with AVX512_BF16 (bf16_medium_gemm.h).
  if (onednn::IsBf16MediumGemm(d)) return onednn::Bf16MediumGemm(d, a, b, bias, c);
  if (onednn::TransposesAFirst(d, avx512_core_)) return MatmulTransposingAFirst(d, a, b, bias, c);
  if (bias == nullptr && onednn::SwapsOperands(d, avx512_core_)) return MatmulSwappingOperands(d, a, b, c);
  // Wide products in parts of 512 columns (column_parts.h).
  if (const int64_t parts = onednn::GemmColumnParts(d, avx512_core_); parts > 1) {
    const GemmDesc part = onednn::ColumnPart(d);
    for (int64_t p = 0; p < parts; ++p) {
      const onednn::ColumnPartOffsets at = onednn::ColumnPartAt(d, p);
      RunMatmul(part, /*ld=*/d.n, a, b + at.b, bias ? bias + at.bias : nullptr, c + at.c);
    }
    return;
  }
  RunMatmul(d, /*ld=*/d.n, a, b, bias, c);
}

void OnednnBackend::RunMatmul(const GemmDesc& d, int64_t ld, const float* a, const float* b, const float* bias,
                              float* c) {
  SingleThreaded small(d.batch * d.m * d.n * d.k < kParallelGemmMacs);
  const bool bf16 = d.precision == Precision::kBf16;
  const dt in_type = bf16 ? dt::bf16 : dt::f32;
  GemmKey key{d.batch, d.m, d.n, d.k, d.trans_a, d.trans_b, d.stride_a, d.stride_b,
              d.stride_c, d.alpha, d.beta, static_cast<int>(d.precision), bias != nullptr, ld};
  // A as (batch|1, m, k) with strides that express the transpose; B's rows
  // (not transposed) and C's rows ld apart.
  memory::dims a_dims = {d.stride_a == 0 ? 1 : d.batch, d.m, d.k};
  memory::dims a_strides = {d.stride_a, d.trans_a ? 1 : d.k, d.trans_a ? d.m : 1};
  memory::dims b_dims = {d.stride_b == 0 ? 1 : d.batch, d.k, d.n};
  memory::dims b_strides = {d.stride_b, d.trans_b ? 1 : ld, d.trans_b ? d.k : 1};
  memory::dims c_dims = {d.batch, d.m, d.n};
  memory::dims c_strides = {d.stride_c == 0 ? d.m * ld : d.stride_c, ld, 1};
  if (a_dims[0] == 1) a_strides[0] = d.m * d.k;
  if (b_dims[0] == 1) b_strides[0] = d.k * ld;
  auto it = matmuls_.find(key);
  if (it == matmuls_.end()) {
    memory::desc a_md(a_dims, in_type, a_strides), b_md(b_dims, in_type, b_strides),
        c_md(c_dims, dt::f32, c_strides);
    memory::desc bias_md({1, 1, d.n}, dt::f32, memory::dims{d.n, d.n, 1});  // (n), every row
    dnnl::primitive_attr attr;
    if (d.alpha != 1.0f) attr.set_output_scales(0, {d.alpha});
    if (d.beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(d.beta);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(
        bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md) : dnnl::matmul::desc(a_md, b_md, c_md),
        attr, engine_);
    CachedMatmul cached{dnnl::matmul(pd),
                        {{DNNL_ARG_SRC, memory(a_md, engine_, nullptr)},
                         {DNNL_ARG_WEIGHTS, memory(b_md, engine_, nullptr)},
                         {DNNL_ARG_DST, memory(c_md, engine_, nullptr)}}};
    if (bias) cached.args.emplace(DNNL_ARG_BIAS, memory(bias_md, engine_, nullptr));
    it = matmuls_.emplace(key, std::move(cached)).first;
  }
  void* a_data = const_cast<float*>(a);
  void* b_data = const_cast<float*>(b);
  if (bf16) {  // (same layout and strides, 2-byte elements)
    ToBf16(a, OperandSpan(d.batch, d.stride_a, d.m * d.k), &a16_);
    ToBf16(b, OperandSpan(d.batch, d.stride_b, d.k * d.n), &b16_);
    a_data = a16_.data();
    b_data = b16_.data();
  }
  std::unordered_map<int, memory>& args = it->second.args;
  args.at(DNNL_ARG_SRC).set_data_handle(a_data);
  args.at(DNNL_ARG_WEIGHTS).set_data_handle(b_data);
  args.at(DNNL_ARG_DST).set_data_handle(c);
  if (bias) args.at(DNNL_ARG_BIAS).set_data_handle(const_cast<float*>(bias));
  it->second.primitive.execute(stream_, args);
  stream_.wait();
}

}  // namespace tvlab
