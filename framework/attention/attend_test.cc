// Attend on its own, with a plain dot-product score defined here (the kit
// knows no plugin): grouped key/value heads equal repeated ones, forward and
// gradient; a described mask hides exactly the keys it names; a KV cache
// decodes what the full sequence computes; packed documents give the same
// outputs and gradients on the fused, unfused and query-chunked paths and
// through a sliding window's cache; AttendTokenMajor reads the projections
// where they lie on a backend that prefers it, and matches the composition.

#include "framework/attention/attend.h"

#include <cmath>
#include <limits>
#include <vector>

#include "framework/attention/kv_cache.h"
#include "framework/autograd/gradcheck.h"
#include "framework/autograd/matmul_precision.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend_registry.h"
#include "framework/backend/describe_backend.h"
#include "framework/interfaces/position_encoding.h"
#include "framework/backend/reference/reference_backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

class DotScore : public AttentionScore {
 public:
  Var Logits(const Var& q, const Var& k) const override {
    return MatMul(q, k, false, true);  // (B, H, T, hs) x (B, H, S, hs)^T -> (B, H, T, S)
  }
};

// The same score, declared fusable (scale 1: the logits are plain q . k).
class FusableDotScore : public DotScore {
 public:
  std::optional<float> FusedDotProductScale() const override { return 1.0f; }
};

// The reference backend, recording the precision each fused call is given.
std::vector<Precision>& SeenPrecisions() {
  static std::vector<Precision> seen;
  return seen;
}
class PrecisionRecordingBackend : public ReferenceBackend {
 public:
  std::string name() const override { return "precision_recording_reference"; }
  void FusedAttention(const FusedAttentionDesc& d, const float* q, const float* k,
                      const float* v, float* out, float* lse) override {
    SeenPrecisions().push_back(d.precision);
    ReferenceBackend::FusedAttention(d, q, k, v, out, lse);
  }
};
const bool kRecorderRegistered =
    RegisterBackend(DescribeBackend<PrecisionRecordingBackend>("precision_recording_reference")
                        .WithPrecisions(&EveryPrecision));

Var Random(const Shape& shape, uint64_t salt) {
  RngStream rng(7, RngPurpose::kInit, salt);
  Tensor t = Tensor::Empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = 2.0f * rng.Uniform(i) - 1.0f;
  return Var(t, /*requires_grad=*/true);
}

float MaxDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  float m = 0.0f;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.data()[i] - b.data()[i]));
  return m;
}

struct Fixture {
  DotScore score;
  Module owner;
  AttentionContext Context(const AttentionMask& mask) const {
    AttentionContext c;
    c.score = &score;
    c.mask = mask;
    c.owner = &owner;
    return c;
  }
};

TEST(Attend, GroupedKeyValueHeadsEqualRepeatedHeads) {
  Fixture f;
  AttentionMask mask = CausalMask(0);
  mask.key_lengths = {5, 3};
  Var q = Random({2, 4, 5, 3}, 1);  // (B, H, T, hs)
  for (int64_t g : {1, 2}) {
    Var k = Random({2, g, 5, 3}, 2), v = Random({2, g, 5, 3}, 3);  // (B, G, S, hs)
    Var grouped = Attend(q, k, v, f.Context(mask));                // (B, H, T, hs)
    Var repeated = Attend(q, RepeatHeads(k, 4 / g), RepeatHeads(v, 4 / g), f.Context(mask));
    EXPECT_LE(MaxDiff(grouped.value(), repeated.value()), 1e-6f) << g;
    GradCheckResult r = GradCheck(
        [&](const std::vector<Var>& in) {
          return Sum(Square(Attend(in[0], in[1], in[2], f.Context(mask))));
        },
        {q, k, v});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

// runtime.precision reaches the fused kernel's description (gpu_cuda runs
// its tensor-core kernels for bf16), as it reaches the unfused path's MatMuls.
TEST(Attend, FusedKernelIsGivenTheRuntimePrecision) {
  ASSERT_TRUE(kRecorderRegistered);
  FusableDotScore score;
  Module owner;
  AttentionContext c;
  c.score = &score;
  c.mask = CausalMask(0);
  c.owner = &owner;
  const AttentionKernel policy = CurrentAttentionKernel();
  SetAttentionKernel(AttentionKernel::kFused);
  ScopedBackend backend("precision_recording_reference");
  SeenPrecisions().clear();
  const Var q = Random({1, 2, 4, 3}, 1), k = Random({1, 2, 4, 3}, 2), v = Random({1, 2, 4, 3}, 3);
  Attend(q, k, v, c);
  {
    ScopedMatMulPrecision bf16(Precision::kBf16);
    Attend(q, k, v, c);
  }
  SetAttentionKernel(policy);
  EXPECT_EQ(SeenPrecisions(), (std::vector<Precision>{Precision::kFp32, Precision::kBf16}));
}

TEST(Attend, MaskDescriptionHidesExactlyTheNamedKeys) {
  Fixture f;
  std::vector<float> weights;
  AttentionProbe probe = [&](const std::string&, const Tensor& w) { weights = w.ToVector(); };
  AttentionContext c = f.Context(CausalMask(/*offset=*/1));
  c.mask.key_lengths = {4, 2};
  c.probe = &probe;
  const int64_t t = 3, s = 4;
  Attend(Random({2, 1, t, 2}, 4), Random({2, 1, s, 2}, 5), Random({2, 1, s, 2}, 6), c);
  ASSERT_EQ(weights.size(), static_cast<size_t>(2 * t * s));  // (B, H, T, S)
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < t; ++i) {
      float sum = 0.0f;
      for (int64_t j = 0; j < s; ++j) {
        const float w = weights[(b * t + i) * s + j];
        const bool hidden = j > 1 + i || j >= c.mask.key_lengths[b];
        if (hidden) {
          EXPECT_EQ(w, 0.0f) << b << " " << i << " " << j;
        }
        sum += w;
      }
      EXPECT_NEAR(sum, 1.0f, 1e-5f);
    }
}

TEST(Attend, KvCacheDecodingEqualsTheFullSequence) {
  Fixture f;
  const int64_t t = 4;
  Var q = Random({1, 2, t, 3}, 7), k = Random({1, 1, t, 3}, 8), v = Random({1, 1, t, 3}, 9);
  Var full = Attend(q, k, v, f.Context(CausalMask(0)));  // (B, H, T, hs)
  KvCache cache;
  for (int64_t i = 0; i < t; ++i) {
    AttentionContext c = f.Context(CausalMask(i));
    c.cache = &cache;
    c.position_offset = i;
    Var step = Attend(Slice(q, 2, i, 1), Slice(k, 2, i, 1), Slice(v, 2, i, 1), c);  // (B, H, 1, hs)
    EXPECT_LE(MaxDiff(step.value(), Slice(full, 2, i, 1).value()), 1e-6f) << i;
  }
  EXPECT_EQ(cache.Names(), (std::vector<std::string>{"k", "v"}));
  EXPECT_EQ(cache.Bytes(4), 2 * t * 3 * 4);  // one kv head: never repeated into the cache
}

// Rows packed from documents (B = 2, T = 7): ids per position.
const std::vector<int32_t> kDocumentIds = {0, 0, 0, 1, 1, 2, 2, 5, 5, 5, 5, 5, 5, 6};

// Output and the gradients of q, k, v of Sum(Square(Attend)), on the path
// `kernel` takes (chunk_rows > 0: the query-chunked unfused path).
std::vector<Tensor> OutputAndGradients(const AttentionContext& c, AttentionKernel kernel,
                                       int64_t chunk_rows) {
  const AttentionKernel policy = CurrentAttentionKernel();
  SetAttentionKernel(kernel);
  SetQueryChunkRowsForTesting(chunk_rows);
  Var q = Random({2, 4, 7, 3}, 11), k = Random({2, 2, 7, 3}, 12), v = Random({2, 2, 7, 3}, 13);
  Var out = Attend(q, k, v, c);  // (B, H, T, hs)
  Backward(Sum(Square(out)));
  SetQueryChunkRowsForTesting(0);
  SetAttentionKernel(policy);
  return {out.value(), q.grad(), k.grad(), v.grad()};
}

TEST(Attend, DocumentsAgreeOnTheFusedUnfusedAndChunkedPaths) {
  FusableDotScore score;
  Module owner;
  AttentionMask causal = CausalMask(0), windowed = CausalMask(0), bidirectional;
  windowed.window = 2;
  bidirectional.key_lengths = {7, 5};
  for (AttentionMask* mask : {&causal, &windowed, &bidirectional}) {
    SetDocuments(mask, kDocumentIds, 2, 7);
    AttentionContext c;
    c.score = &score;
    c.mask = *mask;
    c.owner = &owner;
    const int64_t fused_before = FusedAttentionCalls(), chunked_before = QueryChunkedAttentionCalls();
    const std::vector<Tensor> unfused = OutputAndGradients(c, AttentionKernel::kUnfused, 0);
    const std::vector<Tensor> fused = OutputAndGradients(c, AttentionKernel::kFused, 0);
    const std::vector<Tensor> chunked = OutputAndGradients(c, AttentionKernel::kAuto, 3);
    EXPECT_EQ(FusedAttentionCalls(), fused_before + 1);
    EXPECT_EQ(QueryChunkedAttentionCalls(), chunked_before + 1);
    for (size_t i = 0; i < unfused.size(); ++i) {
      EXPECT_LE(MaxDiff(fused[i], unfused[i]), 1e-5f) << i;
      EXPECT_LE(MaxDiff(chunked[i], unfused[i]), 1e-5f) << i;
    }
    // The documents matter: without them the output differs.
    c.mask.document_begin.clear(), c.mask.document_end.clear(), c.mask.document_positions = 0;
    EXPECT_GT(MaxDiff(OutputAndGradients(c, AttentionKernel::kUnfused, 0)[0], unfused[0]), 1e-3f);
  }
}

// A sliding window's cache drops old keys (AttendOverHeldKeys): the
// documents, stated over every position so far, are restated over the held
// keys, and each step equals the full sequence's row.
TEST(Attend, KvCacheWithAWindowKeepsTheDocuments) {
  Fixture f;
  const int64_t t = 7;
  const std::vector<int32_t> ids(kDocumentIds.begin(), kDocumentIds.begin() + t);  // row 0
  Var q = Random({1, 2, t, 3}, 7), k = Random({1, 1, t, 3}, 8), v = Random({1, 1, t, 3}, 9);
  AttentionMask mask = CausalMask(0);
  mask.window = 3;
  SetDocuments(&mask, ids, 1, t);
  Var full = Attend(q, k, v, f.Context(mask));  // (B, H, T, hs)
  KvCache cache;
  for (int64_t i = 0; i < t; ++i) {
    AttentionMask step_mask = CausalMask(i);
    step_mask.window = 3;
    SetDocuments(&step_mask, std::vector<int32_t>(ids.begin(), ids.begin() + i + 1), 1, i + 1);
    AttentionContext c = f.Context(step_mask);
    c.cache = &cache;
    c.position_offset = i;
    Var step = Attend(Slice(q, 2, i, 1), Slice(k, 2, i, 1), Slice(v, 2, i, 1), c);  // (B, H, 1, hs)
    EXPECT_LE(MaxDiff(step.value(), Slice(full, 2, i, 1).value()), 1e-6f) << i;
  }
}

// A position that rotates (negates) queries and keys, and one that leaves
// them alone and adds no bias.
class Negating : public PositionEncoding {
 public:
  Var RotateQueryOrKey(const Var& qk, int64_t) const override { return Scale(qk, -1.0f); }
  FusedLogitBias FusedLogitBiasFor(int64_t) const override { return {true, {}}; }
};
// Negates queries only (so the scores change sign), head-major, and
// token-major where they lie, as rope turns them.
class NegatedQueries : public PositionEncoding {
 public:
  Var RotateQuery(const Var& q, int64_t) const override { return Scale(q, -1.0f); }
  Var RotateKey(const Var& k, int64_t) const override { return k; }
  FusedLogitBias FusedLogitBiasFor(int64_t) const override { return {true, {}}; }
  bool RotatesTokenMajor() const override { return true; }
  Var RotateQueryTokenMajor(const Var& q, int64_t) const override { return Scale(q, -1.0f); }
  Var RotateKeyTokenMajor(const Var& k, int64_t) const override { return k; }
};
class Untouched : public PositionEncoding {
 public:
  FusedLogitBias FusedLogitBiasFor(int64_t) const override { return {true, {}}; }
  bool LeavesQueriesAndKeysAlone() const override { return true; }
};

// Output and the gradients of token-major q (B, T, H, hs), k and v of
// Sum(Square(AttendTokenMajor)) under `kernel`.
std::vector<Tensor> TokenMajorOutputAndGradients(const AttentionContext& c, AttentionKernel kernel) {
  SetAttentionKernel(kernel);
  Var q = Random({2, 7, 4, 3}, 21), k = Random({2, 7, 2, 3}, 22), v = Random({2, 7, 2, 3}, 23);
  Var out = AttendTokenMajor(q, k, v, c);  // (B, T, H, hs)
  Backward(Sum(Square(out)));
  SetAttentionKernel(AttentionKernel::kAuto);
  return {out.value(), q.grad(), k.grad(), v.grad()};
}

// On cpu_onednn with AVX-512 (PrefersTokenMajorFusedAttention), "auto" at 7
// tokens runs the fused kernel on token-major q, k, v, with the
// composition's output and gradients, also behind a rotation that turns
// token-major rows; "unfused", or a position that rotates head-major only,
// keeps the permuted composition.
TEST(Attend, TokenMajorCallsFuseWhereTheBackendPrefersThem) {
  ScopedBackend backend("cpu_onednn");
  FusedAttentionDesc probe;
  probe.batch = 2, probe.heads = 4, probe.kv_heads = 2, probe.queries = 7, probe.keys = 7;
  probe.head_dim = probe.value_dim = 3, probe.token_major = true;
  if (!CurrentBackend().PrefersTokenMajorFusedAttention(probe)) GTEST_SKIP() << "no AVX-512: no token-major calls";
  FusableDotScore score;
  Module owner;
  Untouched untouched;
  Negating negating;
  AttentionContext c;
  c.score = &score, c.mask = CausalMask(0), c.owner = &owner;
  c.rotation = c.logit_bias = &untouched;  // as sinusoidal positions: nothing inside attention
  const int64_t before = FusedAttentionCalls();
  const std::vector<Tensor> fused = TokenMajorOutputAndGradients(c, AttentionKernel::kAuto);
  EXPECT_EQ(FusedAttentionCalls(), before + 1) << "auto did not take the token-major kernel";
  const std::vector<Tensor> composed = TokenMajorOutputAndGradients(c, AttentionKernel::kUnfused);
  EXPECT_EQ(FusedAttentionCalls(), before + 1) << "unfused fused";
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_LE(MaxDiff(fused[i], composed[i]), 1e-5f) << i;
  c.rotation = c.logit_bias = &negating;
  TokenMajorOutputAndGradients(c, AttentionKernel::kAuto);
  EXPECT_EQ(FusedAttentionCalls(), before + 1) << "a rotation the kernel cannot apply was skipped";
  NegatedQueries negated_queries;
  c.rotation = c.logit_bias = &negated_queries;
  const std::vector<Tensor> turned = TokenMajorOutputAndGradients(c, AttentionKernel::kAuto);
  EXPECT_EQ(FusedAttentionCalls(), before + 2) << "a token-major rotation kept the permutes";
  const std::vector<Tensor> turned_composed = TokenMajorOutputAndGradients(c, AttentionKernel::kUnfused);
  for (size_t i = 0; i < turned.size(); ++i) EXPECT_LE(MaxDiff(turned[i], turned_composed[i]), 1e-5f) << i;
  EXPECT_GT(MaxDiff(turned[0], fused[0]), 1e-3f) << "the queries were not negated";
}

}  // namespace
}  // namespace tvlab
