// The CUDA fused attention kernels (fp32: fused_attention_forward.cuh and
// fused_attention_backward.cuh; the tensor-core ones of
// fused_attention_tensor_core_*.cuh) through their real
// launchers (fused_attention_kernel.cu), on the CPU emulator
// (emulator/cuda_emulator.h), against the reference backend. The shapes are
// smaller than the conformance suite's (the emulator runs a fiber per
// thread) but reach what it does not: causal with offset, key padding with
// an empty row, ALiBi, soft-cap, sinks, GQA and MQA, T != S, dropout,
// sliding windows (causal, with a cache offset, bidirectional, W = 2, and
// with soft-cap and sinks), bucketed relative biases (T5: causal with a cache
// offset, bidirectional with a window, with soft-cap and sinks; the table's
// gradient from fused_attention_bias_backward.cuh), and head sizes from 8 to 300 (every
// kDimsPerLane template, windows past 256 columns, both tensor-core
// widths), and packed documents (attention_mask.h: causal across tiles with
// padding and dropout, with a window and a cache offset, bidirectional with a
// bucketed bias). What the emulator cannot check (nvcc's code, timing)
// is left to tools/gpu_check.sh on a real GPU.

#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/gpu_cuda/dropout_kernel.h"
#include "framework/backend/gpu_cuda/fused_attention_kernel.h"
#include "framework/backend/precision.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using cuda::FusedAttentionParams;

std::vector<float> Random(int64_t n, uint64_t salt) {
  RngStream rng(1234, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = -2.0f + 4.0f * rng.Uniform(i);
  return v;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
      failures += got[i] != want[i];
      continue;
    }
    const bool close = std::fabs(got[i] - want[i]) <= tol * (1.0f + std::fabs(want[i]));
    EXPECT_TRUE(close) << what << " at " << i << ": " << got[i] << " vs " << want[i];
    failures += !close;
  }
}

// What the params point at (host memory is device memory on the emulator).
struct Tables {
  std::vector<int32_t> lengths, buckets;
  std::vector<float> distance_bias;
};

// The params gpu_cuda_attention.cc builds, with host pointers for the tables
// (device memory is host memory on the emulator).
FusedAttentionParams Params(const FusedAttentionDesc& d, Tables* tables) {
  std::vector<int32_t>* lengths = &tables->lengths;
  FusedAttentionParams p;
  p.batch = d.batch, p.heads = d.heads, p.kv_heads = d.kv_heads;
  p.queries = d.queries, p.keys = d.keys, p.head_dim = d.head_dim, p.value_dim = d.value_dim;
  p.scale = d.scale;
  p.causal = d.mask.causal, p.causal_offset = d.mask.causal_offset, p.window = d.mask.window;
  p.alibi_offset = d.alibi_offset;
  if (!d.alibi_slopes.empty()) p.alibi_slopes = d.alibi_slopes.data();
  p.logit_softcap = d.logit_softcap;
  if (!d.sink_logits.empty()) p.sink_logits = d.sink_logits.data();
  lengths->assign(d.mask.key_lengths.begin(), d.mask.key_lengths.end());
  if (!lengths->empty()) p.key_lengths = lengths->data();
  if (d.mask.has_documents()) {  // (B, S) tables, as the desc holds them
    p.document_begin = d.mask.document_begin.data();
    p.document_end = d.mask.document_end.data();
  }
  if (d.has_bucket_bias()) {
    tables->distance_bias = d.DistanceBias();
    tables->buckets = d.DistanceBuckets();
    p.distance_bias = tables->distance_bias.data();
    p.distance_buckets = tables->buckets.data();
    p.distance_span = d.distance_span();
    p.num_buckets = d.bucket_bias.rule.num_buckets;
  }
  if (d.dropout > 0.0f) {
    p.dropout = true;
    p.dropout_threshold = DropoutThreshold(d.dropout);
    p.keep_scale = 1.0f / (1.0f - d.dropout);
    p.stream = cuda::MakePhiloxStream(*d.dropout_stream);
  }
  return p;
}

struct Case {
  std::string name;
  FusedAttentionDesc d;
};

std::vector<Case> Cases() {
  auto base = [](int64_t b, int64_t h, int64_t g, int64_t t, int64_t s, int64_t hs, int64_t hv) {
    FusedAttentionDesc d;
    d.batch = b, d.heads = h, d.kv_heads = g, d.queries = t, d.keys = s;
    d.head_dim = hs, d.value_dim = hv, d.scale = 1.0f / std::sqrt(static_cast<float>(hs));
    return d;
  };
  // Document ids (B, S) of rows packed from documents of the given lengths.
  auto documents = [](FusedAttentionDesc* d, const std::vector<std::vector<int>>& rows) {
    std::vector<int32_t> ids;
    for (const std::vector<int>& lengths : rows)
      for (size_t doc = 0; doc < lengths.size(); ++doc) ids.insert(ids.end(), lengths[doc], doc);
    SetDocuments(&d->mask, ids, d->batch, d->keys);
  };
  std::vector<Case> cases;
  FusedAttentionDesc d = base(1, 2, 2, 37, 37, 16, 16);
  d.mask = CausalMask(0);
  cases.push_back({"mha causal", d});
  d = base(2, 4, 2, 20, 70, 16, 8);
  d.mask = KeyPaddingMask({70, 41});
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 3;
  cases.push_back({"gqa padding alibi", d});
  d = base(1, 4, 1, 1, 70, 8, 8);
  d.mask = CausalMask(69);
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 69;
  cases.push_back({"mqa decode one query", d});
  d = base(2, 2, 1, 40, 40, 8, 12);
  d.mask = CausalMask(0);
  d.mask.key_lengths = {0, 25};  // row 0 sees no key
  d.scale = 1.0f;
  cases.push_back({"causal padding empty row", d});
  d = base(2, 2, 2, 40, 40, 8, 8);
  d.mask = CausalMask(0);
  d.dropout = 0.2f;
  d.dropout_stream = RngStream(3, RngPurpose::kDropout, 17);
  cases.push_back({"dropout", d});
  d = base(1, 2, 1, 20, 33, 128, 64);
  d.mask = CausalMask(13);  // a KV cache of 13 tokens, 20 new queries
  cases.push_back({"head sizes 128 and 64, cache offset", d});
  d = base(1, 2, 2, 18, 35, 264, 300);
  cases.push_back({"head sizes past 256 (two windows)", d});
  d = base(1, 4, 2, 150, 150, 64, 64);  // several 64-row tiles, a partial last one
  d.mask = CausalMask(0);
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(5, RngPurpose::kDropout, 2);
  cases.push_back({"gqa causal dropout, three tiles", d});
  d = base(2, 4, 2, 40, 40, 16, 16);
  d.mask = CausalMask(0);
  d.mask.key_lengths = {0, 25};  // row 0 sees no key: only the sink
  d.scale = 1.0f;                // logits well past the cap
  d.logit_softcap = 2.0f;
  d.sink_logits = {0.5f, -1.0f, 2.0f, 0.0f};
  cases.push_back({"gqa soft-cap and sinks, empty row", d});
  d = base(1, 4, 1, 150, 150, 32, 32);
  d.mask = CausalMask(0);
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.logit_softcap = 5.0f;  // capped after ALiBi
  d.sink_logits = {1.0f, 0.0f, -1.0f, 3.0f};
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(7, RngPurpose::kDropout, 3);
  cases.push_back({"mqa alibi soft-cap sinks dropout, three tiles", d});
  // Sliding windows (attention_mask.h): key tiles before the band skipped
  // in every kernel, the dK/dV sweep bounded on both sides.
  d = base(1, 2, 2, 150, 150, 16, 16);
  d.mask = CausalMask(0);
  d.mask.window = 40;  // across 64-row and 32-key tiles
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(9, RngPurpose::kDropout, 4);
  cases.push_back({"causal window 40, dropout", d});
  d = base(2, 4, 2, 20, 90, 16, 8);
  d.mask = CausalMask(70);  // a cache of 70 keys, 20 new queries
  d.mask.window = 17;
  d.mask.key_lengths = {90, 80};
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 70;
  cases.push_back({"gqa window 17, cache offset, padding, alibi", d});
  d = base(1, 2, 1, 70, 70, 8, 8);
  d.mask = KeyPaddingMask({70});
  d.mask.window = 9;  // bidirectional: |i - j| < 9
  cases.push_back({"mqa bidirectional window 9", d});
  d = base(1, 2, 2, 33, 33, 8, 8);
  d.mask = CausalMask(0);
  d.mask.window = 2;  // itself and one before (W = 1, whose weights are exactly 1 so that
                      // bf16 rounds nothing, is in the backend conformance suite)
  cases.push_back({"window 2", d});
  d = base(2, 4, 2, 40, 100, 16, 16);
  d.mask = CausalMask(60);  // a cache of 60 keys, 40 new queries
  d.mask.window = 12;
  d.mask.key_lengths = {100, 50};  // row 1 from position 61: only the sink
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 60;
  d.scale = 1.0f;  // logits past the cap
  d.logit_softcap = 3.0f;
  d.sink_logits = {0.5f, -1.0f, 2.0f, 0.0f};
  cases.push_back({"gqa window 12, cache offset, soft-cap, sinks, empty rows", d});
  // Bucketed relative biases (T5's rule, 16 buckets, max distance 40: exact
  // and log-spaced buckets both reached).
  auto bucket_bias = [](int64_t heads, bool causal, int64_t offset) {
    BucketedLogitBias bias;
    bias.rule.causal = causal;
    bias.rule.num_buckets = 16;
    bias.rule.max_distance = 40;
    bias.query_offset = offset;
    bias.table = Random(16 * heads, 11);
    return bias;
  };
  d = base(2, 4, 2, 20, 90, 16, 8);
  d.mask = CausalMask(70);  // a cache of 70 keys, 20 new queries
  d.mask.key_lengths = {90, 80};
  d.bucket_bias = bucket_bias(4, /*causal=*/true, 70);
  cases.push_back({"gqa causal bucketed bias, cache offset, padding", d});
  d = base(1, 2, 1, 70, 70, 8, 8);
  d.mask = KeyPaddingMask({70});
  d.mask.window = 30;
  d.bucket_bias = bucket_bias(2, /*causal=*/false, 0);
  cases.push_back({"mqa bidirectional bucketed bias, window 30", d});
  d = base(2, 4, 2, 40, 40, 16, 16);
  d.mask = CausalMask(0);
  d.mask.key_lengths = {0, 25};  // row 0 sees no key: only the sink
  d.scale = 1.0f;
  d.bucket_bias = bucket_bias(4, /*causal=*/true, 0);
  d.logit_softcap = 2.0f;
  d.sink_logits = {0.5f, -1.0f, 2.0f, 0.0f};
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(11, RngPurpose::kDropout, 6);
  cases.push_back({"gqa bucketed bias, soft-cap, sinks, dropout, empty row", d});
  // Packed documents: a query sees only keys of its own document.
  d = base(2, 4, 2, 150, 150, 16, 16);
  d.mask = CausalMask(0);
  d.mask.key_lengths = {150, 120};
  documents(&d, {{1, 60, 50, 39}, {70, 80}});  // a one-token document; boundaries inside tiles
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(13, RngPurpose::kDropout, 7);
  cases.push_back({"gqa causal documents across tiles, padding, dropout", d});
  d = base(1, 2, 1, 40, 100, 16, 16);
  d.mask = CausalMask(60);  // a cache of 60 keys, 40 new queries
  d.mask.window = 20;
  documents(&d, {{30, 45, 25}});  // queries at 60 .. 99 cross the boundary at 75
  d.alibi_slopes = {0.5, 0.25};
  d.alibi_offset = 60;
  d.scale = 1.0f;
  d.logit_softcap = 3.0f;
  d.sink_logits = {0.5f, -1.0f};
  cases.push_back({"mqa documents, window 20, cache offset, alibi, soft-cap, sinks", d});
  d = base(2, 2, 2, 70, 70, 8, 8);
  d.mask = KeyPaddingMask({70, 64});
  documents(&d, {{10, 33, 27}, {70}});
  d.bucket_bias = bucket_bias(2, /*causal=*/false, 0);
  cases.push_back({"bidirectional documents, bucketed bias, padding", d});
  return cases;
}

struct Outputs {
  std::vector<float> out, lse, dq, dk, dv, dtable;
};

// Forward and backward through the launchers, outputs filled with garbage
// first (the kernels must overwrite every element); the backward starts
// from the reference's out and lse, as in the conformance suite.
Outputs Launch(const FusedAttentionParams& p, const std::vector<float>& q,
               const std::vector<float>& k, const std::vector<float>& v,
               const std::vector<float>& dout, const std::vector<float>& ref_out,
               const std::vector<float>& ref_lse) {
  Outputs o{std::vector<float>(ref_out.size(), 7.0f), std::vector<float>(ref_lse.size(), 7.0f),
            std::vector<float>(q.size(), 7.0f), std::vector<float>(k.size(), 7.0f),
            std::vector<float>(v.size(), 7.0f)};
  std::vector<float> row_dot(ref_lse.size(), 7.0f);
  const bool bucketed = p.distance_bias != nullptr;
  o.dtable.assign(bucketed ? p.num_buckets * p.heads : 0, 7.0f);
  std::vector<float> distance_grad(bucketed ? p.heads * p.distance_span : 0, 7.0f);
  EXPECT_EQ(cuda::LaunchFusedAttentionForward(p, q.data(), k.data(), v.data(), o.out.data(),
                                              o.lse.data()),
            "");
  EXPECT_EQ(cuda::LaunchFusedAttentionBackward(p, q.data(), k.data(), v.data(), ref_out.data(),
                                               ref_lse.data(), dout.data(), o.dq.data(),
                                               o.dk.data(), o.dv.data(), row_dot.data(),
                                               bucketed ? o.dtable.data() : nullptr,
                                               bucketed ? distance_grad.data() : nullptr),
            "");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << cuda_emulator::LastFailure();
  return o;
}

struct Inputs {
  std::vector<float> q, k, v, dout;
};

Inputs RandomInputs(const FusedAttentionDesc& d, bool bf16) {
  Inputs in{Random(d.batch * d.heads * d.queries * d.head_dim, 1),
            Random(d.batch * d.kv_heads * d.keys * d.head_dim, 2),
            Random(d.batch * d.kv_heads * d.keys * d.value_dim, 3),
            Random(d.batch * d.heads * d.queries * d.value_dim, 4)};
  if (bf16)  // what the tensor-core kernels stage: the reference sees the same values
    for (std::vector<float>* x : {&in.q, &in.k, &in.v, &in.dout})
      for (float& e : *x) e = RoundToBf16(e);
  return in;
}

TEST(FusedAttentionEmulated, KernelsMatchTheReferenceBackend) {
  if (!cuda_emulator::Available()) GTEST_SKIP() << "the emulator's fibers need x86-64";
  auto ref = std::move(*MakeBackend("reference"));
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const FusedAttentionDesc& d = c.d;
    const Inputs in = RandomInputs(d, /*bf16=*/false);
    std::vector<float> out(in.dout.size()), lse(d.batch * d.heads * d.queries), dq(in.q.size()),
        dk(in.k.size()), dv(in.v.size()), dtable(d.bucket_bias.table.size());
    ref->FusedAttention(d, in.q.data(), in.k.data(), in.v.data(), out.data(), lse.data());
    ref->FusedAttentionBackward(d, in.q.data(), in.k.data(), in.v.data(), out.data(), lse.data(),
                                in.dout.data(), dq.data(), dk.data(), dv.data(),
                                d.has_bucket_bias() ? dtable.data() : nullptr);
    Tables tables;
    const Outputs got = Launch(Params(d, &tables), in.q, in.k, in.v, in.dout, out, lse);
    ExpectClose(got.out, out, 1e-5f, c.name + ": out");
    ExpectClose(got.lse, lse, 1e-5f, c.name + ": lse");
    ExpectClose(got.dq, dq, 2e-5f, c.name + ": dq");
    ExpectClose(got.dk, dk, 2e-5f, c.name + ": dk");
    ExpectClose(got.dv, dv, 2e-5f, c.name + ": dv");
    ExpectClose(got.dtable, dtable, 1e-4f, c.name + ": dtable");
  }
}

// runtime.precision bf16: the tensor-core kernels where both padded head
// sizes are at most 128, against the reference on the same inputs rounded
// to bf16 (what the kernels stage). The remaining difference is the bf16
// rounding of the weights and of dS before their products (relative 2^-9
// each), hence the tolerances; a wrong mask, tile bound, rescale or dropout
// index is off by far more. That the tensor-core kernels ran at all shows
// in that rounding: their results differ from the fp32 kernels' on the
// same inputs, which match the reference to 1e-5.
TEST(FusedAttentionEmulated, TensorCoreKernelsMatchTheReferenceOnBf16Inputs) {
  if (!cuda_emulator::Available()) GTEST_SKIP() << "the emulator's fibers need x86-64";
  auto ref = std::move(*MakeBackend("reference"));
  int ran = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const FusedAttentionDesc& d = c.d;
    if (d.head_dim > 128 || d.value_dim > 128) continue;  // the fp32 kernels run (test above)
    ++ran;
    const Inputs in = RandomInputs(d, /*bf16=*/true);
    std::vector<float> out(in.dout.size()), lse(d.batch * d.heads * d.queries), dq(in.q.size()),
        dk(in.k.size()), dv(in.v.size()), dtable(d.bucket_bias.table.size());
    ref->FusedAttention(d, in.q.data(), in.k.data(), in.v.data(), out.data(), lse.data());
    ref->FusedAttentionBackward(d, in.q.data(), in.k.data(), in.v.data(), out.data(), lse.data(),
                                in.dout.data(), dq.data(), dk.data(), dv.data(),
                                d.has_bucket_bias() ? dtable.data() : nullptr);
    Tables tables;
    FusedAttentionParams p = Params(d, &tables);
    const Outputs fp32 = Launch(p, in.q, in.k, in.v, in.dout, out, lse);
    p.bf16 = true;
    cuda_emulator::ClearWmmaError();
    const Outputs got = Launch(p, in.q, in.k, in.v, in.dout, out, lse);
    EXPECT_EQ(cuda_emulator::WmmaError(), "");
    ExpectClose(got.out, out, 1e-2f, c.name + ": out");
    ExpectClose(got.lse, lse, 1e-4f, c.name + ": lse");
    ExpectClose(got.dq, dq, 2e-2f, c.name + ": dq");
    ExpectClose(got.dk, dk, 2e-2f, c.name + ": dk");
    ExpectClose(got.dv, dv, 2e-2f, c.name + ": dv");
    ExpectClose(got.dtable, dtable, 2e-2f, c.name + ": dtable");
    EXPECT_NE(got.out, fp32.out) << "the tensor-core kernels did not run (no bf16 rounding)";
  }
  EXPECT_EQ(ran, 20) << "every case but the one with head sizes past 128";
}

}  // namespace
}  // namespace tvlab
