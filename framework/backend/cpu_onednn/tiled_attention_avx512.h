#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_H_

// The tiled fused attention kernel (tiled_attention.h) for plain attention
// on CPUs with AVX-512F: masks (causal, key padding, windows, documents),
// grouped key/value heads, dropout (the same factors as the sgemm kernel and
// the reference: DropoutFactors in the (B, H, T, S) order), head sizes 16,
// 32 or 64 (the same for values), head- or token-major rows, fp32; no ALiBi,
// bucketed bias, soft-cap or sink (those stay with the sgemm kernel).
//
// Why a second tiled kernel: at the GPT config's shape (T 256, head size
// 32, causal) the sgemm kernel spent about 40% of its time outside the
// products (a call into sgemm for each tile, each packing its operands,
// and a row loop at a time around them; bench/README.md). Here a key/value
// head's keys and values are packed once per task, transposed where a
// product needs them so (16 x 16 shuffles), and each query block of 32
// rows runs its products as blocks of sums in registers over those panels
// (tiled_attention_avx512_blocks.h), every key the block sees in one pass.
// So a key/value head's panels (keys x head size floats each, five of them
// in the backward) are at most kTiledAvx512MaxPanel floats: past that they
// left L2, and the backward ran slower than the sgemm kernel's (head size
// 64 at 2,048 keys: 0.62-0.89x; at 1,024: 1.08-1.09x; bench/README.md).
//
// Not the sgemm kernel's bits (another order of sums, FMA throughout):
// fused attention's contract is the reference's values within rounding,
// and the fused attention conformance suite checks this kernel against the
// reference on every case it takes (cpu_onednn takes it on CPUs with
// AVX-512F, within the limits below). Every thread count computes the same bits: a task is a
// query head (forward) or a key/value head (backward), whole.

#include <cstdint>

#include "framework/backend/fused_attention.h"

namespace tvlab {
namespace onednn {

// The largest keys x head size the kernel takes, and the fewest queries:
// below eight (decoding), packing a head's keys costs more than the
// products it serves (one query against 1,024 keys: 0.64-0.67x the sgemm
// kernel's forward; eight: 0.97-1.13x).
constexpr int64_t kTiledAvx512MaxPanel = 64 * 1024;
constexpr int64_t kTiledAvx512MinQueries = 8;

// Whether this CPU runs the kernel and `d` is plain attention (dropout
// allowed) at a head size it has (above): what it computes. tiled_attention_bench times it
// on such calls outside the limits below too.
bool TiledAttentionAvx512Computes(const FusedAttentionDesc& d);
// Whether cpu_onednn gives it `d`: it computes it, within the limits above.
bool TiledAttentionAvx512Takes(const FusedAttentionDesc& d);
// The same for the backward, which runs a task per key/value head: with
// fewer of them than threads (batch 1 with MQA, say) it says no, and the
// sgemm kernel splits their keys over the threads instead.
bool TiledAttentionAvx512TakesBackward(const FusedAttentionDesc& d);

// REQUIRE: TiledAttentionAvx512Computes(d). The arguments and layouts of
// TiledAttentionForward / TiledAttentionBackward (no bias table).
void TiledAttentionForwardAvx512(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
                                 float* out, float* lse);
void TiledAttentionBackwardAvx512(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
                                  const float* out, const float* lse, const float* dout, float* dq, float* dk,
                                  float* dv);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_H_
