// cpu_onednn's engine, its GEMM precisions (decided from the CPU, without an
// engine) and its registration; the kernels are in the other onednn_*.cc
// files of this folder and in tiled_attention.cc, tiled_attention_avx512.cc
// and short_attention.cc.

#include "framework/backend/cpu_onednn/onednn_backend.h"

#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/cpu_onednn/short_attention_avx512.h"
#include "framework/backend/cpu_onednn/short_attention_heads_avx2.h"
#include "framework/backend/cpu_onednn/tiled_attention.h"
#include "framework/backend/cpu_onednn/tiled_attention_avx512.h"
#include "framework/backend/cpu_onednn/transposed_gemm.h"
#include "framework/backend/describe_backend.h"

namespace tvlab {
namespace {

// Whether oneDNN runs a bf16 x bf16 -> f32 matmul on this CPU: it needs at
// least the AVX512_CORE instruction set (bf16 emulated there; AVX512_BF16 or
// AMX run it natively). Read from the instruction sets oneDNN will use (the
// CPU's, or fewer under DNNL_MAX_CPU_ISA), which needs no engine;
// onednn_precision_test.cc checks it against creating the primitive.
bool OnednnRunsBf16Matmul() { return onednn::OnednnHasAvx512Core(); }

}  // namespace

bool onednn::OnednnHasAvx512Core() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512_core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (isa & avx512_core) == avx512_core;  // the ISA values are sets of feature bits
}

PrecisionSupport OnednnPrecisionSupport(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return {true, ""};
    case Precision::kTf32:
      return {false, "TF32 is a format of NVIDIA tensor cores; oneDNN has no TF32 matmul on CPUs"};
    case Precision::kBf16:
      if (OnednnRunsBf16Matmul()) return {true, ""};
      return {false,
              "oneDNN could not create a bf16 matmul on this CPU: it needs at least the "
              "AVX512_CORE instruction set (AVX512_BF16 or AMX run bf16 natively)"};
  }
  return {false, ""};
}

OnednnBackend::OnednnBackend()
    : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_), avx512_core_(onednn::OnednnHasAvx512Core()) {}

bool OnednnBackend::PrefersTokenMajorFusedAttention(const FusedAttentionDesc& d) const {
  if (IsShortAttention(d)) return onednn::ShortAttentionAvx512Available() || onednn::HeadsInLanesAvx2Takes(d);
  // The tiled kernels read rows at any stride (the AVX-512 one packs a
  // key/value head's rows; the sgemm one's products are sgemm calls
  // with leading dimensions), from as many query-key pairs on as "auto"
  // fuses head-major calls (kFusedAttentionMinPairs, attend.h).
  constexpr int64_t kTiledMinPairs = 64 * 64;
  return d.queries * d.keys >= kTiledMinPairs;
}

void OnednnBackend::FusedAttention(const FusedAttentionDesc& d, const float* q, const float* k,
                                   const float* v, float* out, float* lse) {
  if (IsShortAttention(d)) return ShortAttentionForward(d, q, k, v, out, lse);
  if (onednn::TiledAttentionAvx512Takes(d)) return onednn::TiledAttentionForwardAvx512(d, q, k, v, out, lse);
  TiledAttentionForward(d, q, k, v, out, lse);
}

void OnednnBackend::FusedAttentionBackward(const FusedAttentionDesc& d, const float* q,
                                           const float* k, const float* v, const float* out,
                                           const float* lse, const float* dout, float* dq,
                                           float* dk, float* dv, float* dbias_table) {
  if (IsShortAttention(d)) return ShortAttentionBackward(d, q, k, v, out, lse, dout, dq, dk, dv);
  if (onednn::TiledAttentionAvx512TakesBackward(d))
    return onednn::TiledAttentionBackwardAvx512(d, q, k, v, out, lse, dout, dq, dk, dv);
  TiledAttentionBackward(d, q, k, v, out, lse, dout, dq, dk, dv, dbias_table);
}

namespace {
const bool kRegistered = RegisterBackend(
    DescribeBackend<OnednnBackend>("cpu_onednn").WithPrecisions(&OnednnPrecisionSupport));
}  // namespace

}  // namespace tvlab
