// Fused attention of every registered backend other than the reference,
// against the reference backend, in fp32 and in bf16 (a backend's
// tensor-core path), one test per (backend, case): a sharded run deals the
// cases out evenly (on the emulated gpu_cuda under ASan one case takes from
// a second to a minute).

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/backend/backend.h"
#include "framework/backend/backend_conformance_util.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using conformance::BackendsToCompare;
using conformance::Dev;
using conformance::ExpectClose;
using conformance::Random;

// Fused attention at sizes that cross the tiles of a tiled kernel (64 query
// rows, 128 keys): MHA, GQA and MQA; causal, key padding (a row with no
// key at all), both; ALiBi slopes; decoding one query against a long cache;
// dropout; value size different from the key size; soft-cap and sinks.
struct FusedCase {
  std::string name;
  FusedAttentionDesc d;
};

// A T5-style bucket table for `heads` heads: 32 buckets, max distance 128,
// entries spread over [-2, 2] (seeded), at query offset `offset`.
BucketedLogitBias BucketBias(int64_t heads, bool causal, int64_t offset) {
  BucketedLogitBias bias;
  bias.rule.causal = causal;
  bias.rule.num_buckets = 32;
  bias.rule.max_distance = 128;
  bias.query_offset = offset;
  bias.table = Random(32 * heads, 11);
  return bias;
}

// B batch rows, H query heads, G key/value heads, T queries, S keys, head
// sizes hs (q, k) and hv (v), scale 1 / sqrt(hs); no mask.
FusedAttentionDesc Base(int64_t b, int64_t h, int64_t g, int64_t t, int64_t s, int64_t hs,
                        int64_t hv) {
  FusedAttentionDesc d;
  d.batch = b, d.heads = h, d.kv_heads = g, d.queries = t, d.keys = s;
  d.head_dim = hs, d.value_dim = hv, d.scale = 1.0f / std::sqrt(static_cast<float>(hs));
  return d;
}

std::vector<FusedCase> FusedCases() {
  std::vector<FusedCase> cases;
  FusedAttentionDesc d = Base(2, 2, 2, 70, 70, 16, 16);
  d.mask = CausalMask(0);
  cases.push_back({"mha causal", d});
  d = Base(2, 4, 2, 130, 300, 16, 8);
  d.mask = KeyPaddingMask({300, 171});
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 3;
  cases.push_back({"gqa padding alibi", d});
  d = Base(1, 4, 1, 1, 200, 8, 8);
  d.mask = CausalMask(199);
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 199;
  cases.push_back({"mqa decode one query", d});
  d = Base(2, 2, 1, 140, 140, 8, 12);
  d.mask = CausalMask(0);
  d.mask.key_lengths = {0, 90};  // row 0 sees no key
  d.scale = 1.0f;
  cases.push_back({"causal padding empty row", d});
  d = Base(2, 2, 2, 140, 140, 8, 8);
  d.mask = CausalMask(0);
  d.dropout = 0.2f;
  d.dropout_stream = RngStream(3, RngPurpose::kDropout, 17);
  cases.push_back({"dropout", d});
  // One key/value head at batch 1: fewer groups than threads, so a
  // multi-threaded backward splits the 700 keys into ranges of key tiles.
  d = Base(1, 4, 1, 64, 700, 16, 16);
  d.mask = CausalMask(636);
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(5, RngPurpose::kDropout, 2);
  cases.push_back({"mqa batch 1 keys split across threads", d});
  d = Base(2, 4, 2, 140, 300, 16, 16);
  d.mask = CausalMask(160);
  d.mask.key_lengths = {0, 250};  // row 0 sees no key: only the sink
  d.scale = 1.0f;                 // logits past the cap
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.logit_softcap = 3.0f;
  d.sink_logits = {0.5f, -1.0f, 2.0f, 0.0f};
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(6, RngPurpose::kDropout, 4);
  cases.push_back({"gqa soft-cap after alibi, sinks, empty row, dropout", d});
  // Sliding windows: the tiled kernels skip key tiles before the band
  // (W = 300 spans key tiles; W = 1 sees only the query itself; W >= T is
  // plain causal; a cache offset and key padding; bidirectional).
  d = Base(1, 2, 2, 700, 700, 16, 16);
  d.mask = CausalMask(0);
  d.mask.window = 300;
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(7, RngPurpose::kDropout, 3);
  cases.push_back({"causal window 300 across tiles, dropout", d});
  d = Base(1, 2, 1, 70, 70, 8, 8);
  d.mask = CausalMask(0);
  d.mask.window = 1;
  cases.push_back({"window 1", d});
  d = Base(1, 2, 2, 70, 70, 8, 8);
  d.mask = CausalMask(0);
  d.mask.window = 500;
  cases.push_back({"window past T", d});
  d = Base(2, 4, 2, 40, 600, 16, 8);
  d.mask = CausalMask(560);  // a cache of 560 keys, 40 new queries
  d.mask.window = 257;
  d.mask.key_lengths = {600, 590};
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 560;
  cases.push_back({"gqa window, cache offset, padding, alibi", d});
  d = Base(2, 2, 2, 300, 300, 8, 8);
  d.mask = KeyPaddingMask({300, 200});
  d.mask.window = 100;  // bidirectional: |i - j| < 100
  cases.push_back({"bidirectional window, padding", d});
  // A window with the attention options: the band's tiles, soft-cap and
  // sink together; row 1's keys end before the band of its later queries
  // (only the sink there), across key tiles, with dropout.
  d = Base(2, 4, 2, 140, 700, 16, 16);
  d.mask = CausalMask(560);  // a cache of 560 keys, 140 new queries
  d.mask.window = 300;
  d.mask.key_lengths = {700, 350};  // row 1, positions past 649: no key
  d.scale = 1.0f;  // logits past the cap
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 560;
  d.logit_softcap = 3.0f;
  d.sink_logits = {0.5f, -1.0f, 2.0f, 0.0f};
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(8, RngPurpose::kDropout, 5);
  cases.push_back({"gqa window with soft-cap and sinks, cache offset, padding, dropout", d});
  // Bucketed relative biases (T5): causal with a cache offset and key
  // padding across tiles; bidirectional with a window (keys on both sides,
  // both halves of the table); with soft-cap, sinks and dropout.
  d = Base(2, 4, 2, 140, 300, 16, 16);
  d.mask = CausalMask(160);
  d.mask.key_lengths = {300, 250};
  d.bucket_bias = BucketBias(4, /*causal=*/true, 160);
  cases.push_back({"gqa causal bucketed bias, cache offset, padding", d});
  d = Base(2, 2, 2, 300, 300, 8, 8);
  d.mask = KeyPaddingMask({300, 200});
  d.mask.window = 100;
  d.bucket_bias = BucketBias(2, /*causal=*/false, 0);
  cases.push_back({"bidirectional bucketed bias, window, padding", d});
  d = Base(2, 4, 1, 70, 70, 8, 8);
  d.mask = CausalMask(0);
  d.mask.key_lengths = {0, 70};  // row 0 sees no key: only the sink
  d.scale = 1.0f;
  d.bucket_bias = BucketBias(4, /*causal=*/true, 0);
  d.logit_softcap = 3.0f;
  d.sink_logits = {0.5f, -1.0f, 2.0f, 0.0f};
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(9, RngPurpose::kDropout, 6);
  cases.push_back({"mqa bucketed bias, soft-cap, sinks, dropout", d});
  // Packed documents (attention_mask.h): boundaries inside tiles, a
  // one-token document, with padding and dropout; with a window across a
  // boundary and a cache offset; bidirectional with a bucketed bias.
  auto documents = [](FusedAttentionDesc* d, const std::vector<std::vector<int>>& rows) {
    std::vector<int32_t> ids;  // (B, S): document k of a row has id k
    for (const std::vector<int>& lengths : rows)
      for (size_t doc = 0; doc < lengths.size(); ++doc) ids.insert(ids.end(), lengths[doc], doc);
    SetDocuments(&d->mask, ids, d->batch, d->keys);
  };
  d = Base(2, 4, 2, 300, 300, 16, 16);
  d.mask = CausalMask(0);
  d.mask.key_lengths = {300, 250};
  documents(&d, {{1, 100, 150, 49}, {130, 170}});
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(10, RngPurpose::kDropout, 7);
  cases.push_back({"gqa causal documents, padding, dropout", d});
  d = Base(1, 2, 1, 140, 700, 16, 16);
  d.mask = CausalMask(560);  // queries at 560 .. 699 cross the boundary at 600
  d.mask.window = 300;
  documents(&d, {{200, 400, 100}});
  d.scale = 1.0f;
  d.alibi_slopes = {0.5, 0.25};
  d.alibi_offset = 560;
  d.logit_softcap = 3.0f;
  d.sink_logits = {0.5f, -1.0f};
  cases.push_back({"mqa documents, window, cache offset, alibi, soft-cap, sinks", d});
  d = Base(2, 2, 2, 300, 300, 8, 8);
  d.mask = KeyPaddingMask({300, 200});
  documents(&d, {{10, 290}, {130, 100, 70}});
  d.bucket_bias = BucketBias(2, /*causal=*/false, 0);
  cases.push_back({"bidirectional documents, bucketed bias, padding", d});
  return cases;
}

// A buffer for the table gradient of a case with a bucketed bias
// (num_buckets, H); one unused number without one (the kernels get null).
std::vector<float> TableGradient(const FusedAttentionDesc& d, float fill) {
  return std::vector<float>(std::max<size_t>(d.bucket_bias.table.size(), 1), fill);
}

// Plain attention (masks only, head sizes 16, 32, 64: cpu_onednn's AVX-512
// tiled kernel, tiled_attention_avx512.h, where the CPU has AVX-512F):
// causal GQA with a last query block of 4 rows; a cache offset, key
// padding and a row without keys at head size 64; a causal window across
// packed documents; bidirectional with padding.
std::vector<FusedCase> PlainCases() {
  std::vector<FusedCase> cases;
  FusedAttentionDesc d = Base(2, 4, 2, 100, 100, 32, 32);
  d.mask = CausalMask(0);
  cases.push_back({"plain gqa causal, head size 32", d});
  d = Base(2, 2, 1, 45, 120, 64, 64);
  d.mask = CausalMask(75);
  d.mask.key_lengths = {0, 100};  // row 0 sees no key
  cases.push_back({"plain mqa cache offset, padding, empty row, head size 64", d});
  d = Base(2, 2, 2, 150, 150, 16, 16);
  d.mask = CausalMask(0);
  d.mask.window = 40;
  std::vector<int32_t> ids;  // (B, S): row 0 three documents, row 1 one
  for (int doc = 0; doc < 3; ++doc) ids.insert(ids.end(), doc == 0 ? 60 : doc == 1 ? 1 : 89, doc);
  ids.insert(ids.end(), 150, 0);
  SetDocuments(&d.mask, ids, d.batch, d.keys);
  cases.push_back({"plain causal window 40 across documents, head size 16", d});
  d = Base(1, 3, 3, 70, 90, 32, 32);
  d.mask = KeyPaddingMask({77});
  cases.push_back({"plain bidirectional padding, head size 32", d});
  return cases;
}

// At most 16 keys (cpu_onednn's short kernel, short_attention.h; runtime
// attention "auto" fuses these): the sort model's shape with dropout; GQA
// causal with an empty row, sinks and dropout; MQA decoding against a
// 16-key cache; 37 queries against 11 keys with padding at head size 40;
// a causal window; ALiBi at 8 keys (which cpu_onednn's tiled kernel takes);
// 16 x 8 heads of 64 queries against 16 keys, split over threads; 16 and
// 128 heads with one mask for every batch row (heads in lanes).
std::vector<FusedCase> ShortCases() {
  std::vector<FusedCase> cases;
  FusedAttentionDesc d = Base(3, 4, 4, 8, 8, 16, 16);
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(11, RngPurpose::kDropout, 8);
  cases.push_back({"short: the sort model's 8 keys, dropout", d});
  d = Base(2, 4, 2, 13, 13, 8, 12);
  d.mask = CausalMask(0);
  d.mask.key_lengths = {0, 9};  // row 0 sees no key: only the sink
  d.sink_logits = {0.5f, -1.0f, 2.0f, 0.0f};
  d.dropout = 0.2f;
  d.dropout_stream = RngStream(12, RngPurpose::kDropout, 9);
  cases.push_back({"short gqa causal, empty row, sinks, dropout", d});
  d = Base(2, 4, 1, 1, 16, 32, 24);
  d.mask = CausalMask(15);
  cases.push_back({"short mqa decode one query against 16 keys", d});
  d = Base(2, 2, 2, 37, 11, 40, 20);
  d.mask = KeyPaddingMask({11, 4});
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(13, RngPurpose::kDropout, 10);
  cases.push_back({"short keys, 37 queries, padding, head size 40, dropout", d});
  d = Base(2, 2, 1, 16, 16, 16, 16);
  d.mask = CausalMask(0);
  d.mask.window = 3;
  cases.push_back({"short causal window 3", d});
  d = Base(1, 2, 2, 8, 8, 16, 16);
  d.alibi_slopes = {0.5, 0.25};
  cases.push_back({"short alibi", d});
  // Enough multiply-adds (8.4M) that cpu_onednn's kernel splits the
  // key/value heads over threads; key padding (row 2 sees only the sink).
  // (With 300 queries a dk entry summed 600 products and gpu_cuda's bf16
  // kernel missed InBf16IsCloseToTheReference's bound, 0.050 against 0.033;
  // a NumPy model of that shape with only dS rounded to bf16 already gives
  // 0.62-0.78 of the bound.)
  d = Base(16, 8, 4, 64, 16, 32, 32);
  d.mask = KeyPaddingMask({16, 9, 0, 16, 3, 16, 1, 12, 16, 5, 16, 7, 2, 16, 11, 16});
  d.sink_logits = {0.5f, -1.0f, 2.0f, 0.0f, 0.25f, -0.5f, 1.0f, 0.0f};
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(14, RngPurpose::kDropout, 11);
  cases.push_back({"short keys across threads, sinks, dropout", d});
  // 16 heads and more with the same mask in every batch row: cpu_onednn's
  // AVX-512 kernel puts the heads in lanes (short_attention_heads_avx512.h);
  // the second splits its 8 blocks of 16 heads over threads (4.2M
  // multiply-adds).
  d = Base(4, 4, 4, 8, 8, 16, 16);
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(15, RngPurpose::kDropout, 12);
  cases.push_back({"short heads in lanes: the sort model's shape, dropout", d});
  d = Base(16, 8, 4, 32, 16, 32, 32);
  d.mask = CausalMask(0);
  d.mask.window = 9;
  d.sink_logits = {0.5f, -1.0f, 2.0f, 0.0f, 0.25f, -0.5f, 1.0f, 0.0f};
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(16, RngPurpose::kDropout, 13);
  cases.push_back({"short heads in lanes: gqa, causal window, sinks, dropout, across threads", d});
  return cases;
}

// The cases above plus two at the head sizes of the tensor-core kernels'
// other template widths: 64 (GPT-2's) and 128.
std::vector<FusedCase> AllCases() {
  std::vector<FusedCase> cases = FusedCases();
  FusedAttentionDesc d;
  d.batch = 2, d.heads = 3, d.kv_heads = 3, d.queries = 200, d.keys = 200;
  d.head_dim = d.value_dim = 64, d.scale = 0.125f;
  d.mask = CausalMask(0);
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(9, RngPurpose::kDropout, 4);
  cases.push_back({"head size 64 causal dropout", d});
  d = FusedAttentionDesc();
  d.batch = 1, d.heads = 4, d.kv_heads = 2, d.queries = 100, d.keys = 150;
  d.head_dim = 128, d.value_dim = 96, d.scale = 1.0f / std::sqrt(128.0f);
  d.mask = KeyPaddingMask({133});
  cases.push_back({"head size 128 gqa padding", d});
  for (FusedCase& c : PlainCases()) cases.push_back(std::move(c));
  for (FusedCase& c : ShortCases()) cases.push_back(std::move(c));
  return cases;
}

// Inputs, reference results and the backend's, for one case.
struct FusedRun {
  std::vector<float> out, lse, dq, dk, dv, dtable;
};

// Param: (backend name, index into AllCases()).
class FusedAttentionConformance : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  void SetUp() override {
    const std::string& name = std::get<0>(GetParam());
    auto made = MakeBackend(name);
    if (made.status().code() == absl::StatusCode::kFailedPrecondition)
      GTEST_SKIP() << made.status().message();  // e.g. gpu_cuda on a machine without a GPU
    ASSERT_TRUE(made.ok()) << made.status();
    be_ = std::move(*made);
    described_ = *FindBackend(name);
    ref_ = std::move(*MakeBackend("reference"));
    if (!described_->Implements(Kernel::kFusedAttention) || !described_->Implements(Kernel::kFusedAttentionBackward))
      GTEST_SKIP() << name << " does not implement fused attention";
    case_ = AllCases()[std::get<1>(GetParam())];
  }
  Dev D(const std::vector<float>& v) const { return Dev(be_->device(), v); }

  // Random q, k, v, dout (rounded to bf16 when `bf16_inputs`), through
  // `backend` forward and backward: with the reference (host pointers) when
  // `reference`, else with be_ on its device (outputs start as garbage, 7).
  FusedRun Run(const FusedAttentionDesc& d, bool reference, bool bf16_inputs) const;

  std::unique_ptr<Backend> be_, ref_;
  const BackendDescriptor* described_ = nullptr;
  FusedCase case_;
};

FusedRun FusedAttentionConformance::Run(const FusedAttentionDesc& d, bool reference, bool bf16_inputs) const {
  const int64_t nq = d.batch * d.heads * d.queries * d.head_dim;
  const int64_t nk = d.batch * d.kv_heads * d.keys * d.head_dim;
  const int64_t nv = d.batch * d.kv_heads * d.keys * d.value_dim;
  const int64_t no = d.batch * d.heads * d.queries * d.value_dim;
  const int64_t rows = d.batch * d.heads * d.queries;
  std::vector<float> q = Random(nq, 1), k = Random(nk, 2), v = Random(nv, 3), dout = Random(no, 4);
  if (bf16_inputs)
    for (std::vector<float>* x : {&q, &k, &v, &dout})
      for (float& e : *x) e = RoundToBf16(e);
  const bool table = d.has_bucket_bias();
  FusedRun r;
  if (reference) {
    r = {std::vector<float>(no), std::vector<float>(rows), std::vector<float>(nq), std::vector<float>(nk),
         std::vector<float>(nv), TableGradient(d, 0.0f)};
    ref_->FusedAttention(d, q.data(), k.data(), v.data(), r.out.data(), r.lse.data());
    ref_->FusedAttentionBackward(d, q.data(), k.data(), v.data(), r.out.data(), r.lse.data(), dout.data(),
                                 r.dq.data(), r.dk.data(), r.dv.data(), table ? r.dtable.data() : nullptr);
    return r;
  }
  Dev bq = D(q), bk = D(k), bv = D(v), bdout = D(dout);
  Dev bout = D(std::vector<float>(no, 7.0f)), blse = D(std::vector<float>(rows, 7.0f));
  Dev bdq = D(std::vector<float>(nq, 7.0f)), bdk = D(std::vector<float>(nk, 7.0f)),
      bdv = D(std::vector<float>(nv, 7.0f)), bdtable = D(TableGradient(d, 7.0f));
  be_->FusedAttention(d, bq.p(), bk.p(), bv.p(), bout.p(), blse.p());
  be_->FusedAttentionBackward(d, bq.p(), bk.p(), bv.p(), bout.p(), blse.p(), bdout.p(), bdq.p(), bdk.p(), bdv.p(),
                              table ? bdtable.p() : nullptr);
  return {bout.host(), blse.host(), bdq.host(), bdk.host(), bdv.host(), bdtable.host()};
}

TEST_P(FusedAttentionConformance, ForwardAndBackward) {
  const FusedAttentionDesc& d = case_.d;
  const FusedRun want = Run(d, /*reference=*/true, /*bf16_inputs=*/false);
  const FusedRun got = Run(d, /*reference=*/false, /*bf16_inputs=*/false);
  ExpectClose(got.out, want.out, 1e-5f, case_.name + ": out");
  ExpectClose(got.lse, want.lse, 1e-5f, case_.name + ": lse");
  ExpectClose(got.dq, want.dq, 2e-5f, case_.name + ": dq");
  ExpectClose(got.dk, want.dk, 2e-5f, case_.name + ": dk");
  ExpectClose(got.dv, want.dv, 2e-5f, case_.name + ": dv");
  // Sums of up to T * S terms per entry: a looser bound, still far below
  // a wrong bucket's or sign's error.
  if (d.has_bucket_bias()) ExpectClose(got.dtable, want.dtable, 1e-4f, case_.name + ": dtable");
}

// runtime.precision bf16: a backend may round the products' operands to
// bf16 (gpu_cuda's tensor-core kernels do). On inputs already rounded to
// bf16, what remains is the rounding of the weights and of dS (relative
// 2^-9 each) against the fp32 reference; a wrong mask, tile bound, online
// rescale or dropout index is off by far more. Backends that compute in
// fp32 pass trivially; on a GPU this runs the tensor-core kernels.
TEST_P(FusedAttentionConformance, InBf16IsCloseToTheReference) {
  if (!described_->Supports(Precision::kBf16)) GTEST_SKIP() << "no bf16 on this backend";
  FusedAttentionDesc d = case_.d;
  d.precision = Precision::kFp32;
  const FusedRun want = Run(d, /*reference=*/true, /*bf16_inputs=*/true);
  d.precision = Precision::kBf16;
  const FusedRun got = Run(d, /*reference=*/false, /*bf16_inputs=*/true);
  ExpectClose(got.out, want.out, 1e-2f, case_.name + ": out");
  ExpectClose(got.lse, want.lse, 1e-4f, case_.name + ": lse");
  if (d.has_bucket_bias()) ExpectClose(got.dtable, want.dtable, 3e-2f, case_.name + ": dtable");
  ExpectClose(got.dq, want.dq, 3e-2f, case_.name + ": dq");
  ExpectClose(got.dk, want.dk, 3e-2f, case_.name + ": dk");
  ExpectClose(got.dv, want.dv, 3e-2f, case_.name + ": dv");
}

// Test names end in "/<backend>_case<i>" (e.g. gpu_cuda_case3).
INSTANTIATE_TEST_SUITE_P(AllBackends, FusedAttentionConformance,
                         ::testing::Combine(::testing::ValuesIn(BackendsToCompare()),
                                            ::testing::Range(0, static_cast<int>(AllCases().size()))),
                         [](const auto& info) {
                           return absl::StrCat(std::get<0>(info.param), "_case", std::get<1>(info.param));
                         });

}  // namespace
}  // namespace tvlab
