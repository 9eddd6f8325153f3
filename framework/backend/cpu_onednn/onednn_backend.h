#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_ONEDNN_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_ONEDNN_BACKEND_H_

// CPU backend on oneDNN 2.6: matmul, eltwise and layer normalization run as
// oneDNN primitives, created once per shape and cached. Kernels oneDNN has no
// primitive for (masked softmax with all-masked rows, broadcasting binary
// ops, LayerNorm/RMSNorm backward, permutes, AdamW) are tuned loops here,
// run by OpenMP threads above a size threshold (kParallelElements). Every
// kernel is tested against ReferenceBackend in backend_conformance_test.cc
// (small sizes, one thread) and framework/backend/cpu_onednn/onednn_large_kernels_test.cc (sizes
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

  // One oneDNN primitive per shape, cached: matmul (GEMM; bf16 operands
  // rounded into reused scratch buffers a16_, b16_ and multiplied with an
  // f32 destination), eltwise, layer normalization (onednn_gemm.cc,
  // onednn_elementwise.cc, onednn_rows.cc); tuned loops for the rest
  // (onednn_rows.cc, onednn_normalize_backward.cc, onednn_softmax.cc,
  // onednn_adamw.cc, onednn_pointwise_chain.cc); fused attention: the
  // short kernels up to 16 keys (short_attention.h,
  // short_attention_avx512.h), on AVX-512 CPUs the AVX-512 tiled kernel
  // for plain attention (tiled_attention_avx512.h), the sgemm tiled kernel
  // for the rest (tiled_attention.h). The other kernels are the
  // reference's.
  TVLAB_OVERRIDE_KERNEL(Gemm);
  TVLAB_OVERRIDE_KERNEL(GemmBias);
  TVLAB_OVERRIDE_KERNEL(GemmAndColumnSums);
  TVLAB_OVERRIDE_KERNEL(Unary);
  // GELU, SiLU and ReLU on oneDNN's eltwise backward; the rest as reference.
  TVLAB_OVERRIDE_KERNEL(UnaryBackward);
  TVLAB_OVERRIDE_KERNEL(Binary);
  TVLAB_OVERRIDE_KERNEL(ReduceSumTo);
  TVLAB_OVERRIDE_KERNEL(Softmax);
  TVLAB_OVERRIDE_KERNEL(SoftmaxBackward);
  // The softmax above and the loss from its own sum of exponentials (the
  // reference takes a second pass of double exponentials for the loss).
  TVLAB_OVERRIDE_KERNEL(CrossEntropy);
  // The reference's expression per element, a row's columns vectorised.
  TVLAB_OVERRIDE_KERNEL(CrossEntropyBackward);
  TVLAB_OVERRIDE_KERNEL(Normalize);
  TVLAB_OVERRIDE_KERNEL(NormalizeBackward);
  // NormalizeBackward's rows adding the addend as they write dx.
  TVLAB_OVERRIDE_KERNEL(NormalizeBackwardAdd);
  TVLAB_OVERRIDE_KERNEL(Permute);
  // The reference's loop, vectorised (onednn_rows.cc).
  TVLAB_OVERRIDE_KERNEL(ScatterAdd);
  // The reference's Philox mask in L1-sized chunks (onednn_elementwise.cc).
  TVLAB_OVERRIDE_KERNEL(DropoutMask);
  // Elementwise chains a tile of kPointwiseTile elements at a time through
  // every step, with the loops of Binary and Unary's ReLU
  // (onednn_pointwise_chain.cc); dropout masks kept as bits for a later
  // chain too.
  TVLAB_OVERRIDE_KERNEL(PointwiseChain);
  bool KeepsMaskBits() const override { return true; }
  // The AVX-512 short kernel's calls (short_attention_avx512.h) and the
  // tiled kernels' from 64 x 64 query-key pairs on (tiled_attention.h,
  // tiled_attention_avx512.h): all read token-major q, k, v where they lie. For the tiled kernel this saves
  // memory (no permuted copies: the GPT config's training peak 13% lower),
  // not time: the strided reads cost what the permutes did (bench/README.md).
  bool PrefersTokenMajorFusedAttention(const FusedAttentionDesc& d) const override;
  TVLAB_OVERRIDE_KERNEL(AdamW);
  TVLAB_OVERRIDE_KERNEL(AdamWMany);
  TVLAB_OVERRIDE_KERNEL(SgdMany);
  TVLAB_OVERRIDE_KERNEL(LionMany);
  // Gradient clipping's sum of squares in 32 double lanes (onednn_optimizers.cc).
  TVLAB_OVERRIDE_KERNEL(SumSquares);
  TVLAB_OVERRIDE_KERNEL(FusedAttention);
  TVLAB_OVERRIDE_KERNEL(FusedAttentionBackward);
  // The chunked gated-linear scan: (batch, head) pairs over threads
  // (onednn_gated_linear.cc).
  TVLAB_OVERRIDE_KERNEL(GatedLinearScan);
  TVLAB_OVERRIDE_KERNEL(GatedLinearScanBackward);
  // Routing: the reference's loops over threads (onednn_routing.cc).
  TVLAB_OVERRIDE_KERNEL(TopKRows);
  TVLAB_OVERRIDE_KERNEL(TopKRowsBackward);
  TVLAB_OVERRIDE_KERNEL(DispatchToSlots);
  TVLAB_OVERRIDE_KERNEL(DispatchToSlotsBackward);
  TVLAB_OVERRIDE_KERNEL(CombineFromSlots);
  TVLAB_OVERRIDE_KERNEL(CombineFromSlotsBackward);

 private:
  using GemmKey = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t,
                             int64_t, float, float, int, bool, int64_t>;  // ..., precision, has bias, ld
  // A product through the kernel that takes it (small_gemm.h, medium_gemm.h,
  // transposed_gemm.h, column_parts.h), else one oneDNN matmul; bias (n) or null.
  void Matmul(const GemmDesc& d, const float* a, const float* b, const float* bias, float* c);
  // One matmul primitive per shape (cached), C's rows and B's (not
  // transposed) ld floats apart (ld = d.n but for a column part).
  void RunMatmul(const GemmDesc& d, int64_t ld, const float* a, const float* b, const float* bias, float* c);
  // The routes of transposed_gemm.h (which products, and why): Matmul of
  // `d` after copying A into rows (a_rows_), or of its swapped product
  // into c_columns_, copied back into c by rows.
  void MatmulTransposingAFirst(const GemmDesc& d, const float* a, const float* b,
                               const float* bias, float* c);
  void MatmulSwappingOperands(const GemmDesc& d, const float* a, const float* b, float* c);
  void CopyColumnsToRows(int64_t rows, int64_t cols, const float* src, float* dst);
  using EltwiseKey = std::tuple<int, int64_t>;
  using NormKey = std::tuple<int64_t, int64_t, float, bool, bool>;

  dnnl::engine engine_;
  dnnl::stream stream_;
  // A shape's primitive with its memory objects and argument map, made
  // once: a call only points them at its buffers (set_data_handle).
  struct CachedMatmul {
    dnnl::matmul primitive;
    std::unordered_map<int, dnnl::memory> args;  // DNNL_ARG_SRC, _WEIGHTS, _DST (, _BIAS)
  };
  std::map<GemmKey, CachedMatmul> matmuls_;
  std::vector<uint16_t> a16_, b16_;  // bf16 GEMM operands; they only grow
  bool avx512_core_;                 // oneDNN's instruction sets include AVX512_CORE
  std::vector<float> a_rows_;        // A copied into rows (m, k); only grows
  std::vector<float> c_columns_;     // a swapped product's C^T (n, m); only grows
  std::map<std::pair<int64_t, int64_t>, dnnl::reorder> transposes_;  // per (rows, cols)
  std::map<EltwiseKey, dnnl::eltwise_forward> eltwise_;
  std::map<EltwiseKey, dnnl::eltwise_backward> eltwise_backward_;
  // A LayerNorm shape's primitive with its argument map, made once (as
  // CachedMatmul); its variance output goes to `variance`.
  struct CachedNorm {
    dnnl::layer_normalization_forward primitive;
    std::unordered_map<int, dnnl::memory> args;  // SRC, DST, MEAN, VARIANCE (, SCALE, SHIFT)
    std::vector<float> variance;                 // (rows)
  };
  std::map<NormKey, CachedNorm> norms_;
};

// fp32; bf16 where oneDNN can create a bf16 matmul on this CPU (natively
// with AVX512_BF16/AMX, emulated on AVX512_CORE), decided from the CPU
// without an engine; never tf32 (a GPU format).
PrecisionSupport OnednnPrecisionSupport(Precision precision);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_ONEDNN_BACKEND_H_
