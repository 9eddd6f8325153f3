// Conformance for every (attention layout, attention score) pair linked into
// the test binary. A plugin's BUILD gets this suite from tvlab_plugin();
// nothing here names a plugin.

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include "framework/attention/attend.h"
#include "framework/attention/kv_cache.h"
#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/testing/census.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using Pair = std::tuple<std::string, std::string>;  // (layout, score)

// The softmax-only cases skip a recurrent mixer (kRecurrentMixer) and say
// why; the mixers' cases are attention_conformance_mixers.cc.
#define SKIP_FOR_MIXER(why) \
  if (mixer_) GTEST_SKIP() << "recurrent mixer: " << why
constexpr char kNoWeights[] = "computes no attention weights (no softmax, no probe, no weight dropout)";
constexpr char kSelfOnly[] = "causal self-attention only (validation refuses cross-attention)";
constexpr char kCausalOnly[] = "causal only; the mixer cases check causal padding";
constexpr char kStateNotTokens[] =
    "decodes with a fixed-size state, not per-token entries; the mixer cases check it";

std::vector<Pair> AllPairs() {
  std::vector<Pair> pairs;
  for (const auto& layout : PluginsUnderTest("attention_layout"))
    for (const auto& score : PluginsUnderTest("attention_score")) pairs.emplace_back(layout, score);
  return pairs;
}

class AttentionConformance : public ::testing::TestWithParam<Pair> {
 protected:
  void SetUp() override {
    dims_ = SmallDims();
    layout_ = MakeAttentionLayout(std::get<0>(GetParam()), dims_);
    score_ = MakeAttentionScore(std::get<1>(GetParam()), dims_);
    mixer_ = IsRecurrentMixer(std::get<0>(GetParam()));
  }
  AttentionInput Input(const Var& x, const AttentionMask& mask = AttentionMask()) const {
    AttentionInput in;
    in.x = x;
    in.mask = mask;
    in.score = score_.get();
    return in;
  }
  // Calls compare(in, where) over the cross product the path comparisons
  // run on: every host backend (made current) x linked position plugin x
  // ComparedMasks() x self or cross attention x inference or training with
  // dropout; `where` names the combination for failure messages.
  void ForEachComparedInput(
      const ModelDims& dims,
      const std::function<void(const AttentionInput&, const std::string&)>& compare) const;

  ModelDims dims_;
  std::unique_ptr<AttentionLayout> layout_;
  std::unique_ptr<AttentionScore> score_;
  bool mixer_ = false;
};

TEST_P(AttentionConformance, ShapesForSelfAndCrossAttention) {
  SKIP_FOR_MIXER(kSelfOnly);
  Var x = RandomVar({2, 5, 8}, 1);
  EXPECT_EQ(layout_->Forward(Input(x)).shape(), (Shape{2, 5, 8}));
  AttentionInput cross = Input(x);
  cross.memory = RandomVar({2, 7, 8}, 2);
  EXPECT_EQ(layout_->Forward(cross).shape(), (Shape{2, 5, 8}));
}

TEST_P(AttentionConformance, WeightRowsSumToOneAndMaskedEntriesAreZero) {
  SKIP_FOR_MIXER(kNoWeights);
  Var x = RandomVar({2, 5, 8}, 3);
  AttentionMask mask = CausalMask(0);
  mask.key_lengths = {5, 3};
  std::vector<Tensor> seen;
  AttentionProbe probe = [&](const std::string&, const Tensor& w) { seen.push_back(w.Clone()); };
  AttentionInput in = Input(x, mask);
  in.probe = &probe;
  layout_->Forward(in);
  ASSERT_FALSE(seen.empty()) << "layout did not report its attention weights";
  const Tensor& w = seen[0];  // (B, H, T, S)
  ASSERT_EQ(w.rank(), 4);
  const int64_t b = w.dim(0), h = w.dim(1), t = w.dim(2), s = w.dim(3);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t hd = 0; hd < h; ++hd)
      for (int64_t i = 0; i < t; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < s; ++j) {
          float v = w.data()[((n * h + hd) * t + i) * s + j];
          bool masked = j > i || j >= (n == 0 ? 5 : 3);
          if (masked) {
            EXPECT_EQ(v, 0.0f) << "masked weight at " << n << "," << i << "," << j;
          }
          sum += v;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
}

TEST_P(AttentionConformance, CausalOutputsIgnoreTheFutureBitForBit) {
  const int64_t t = 6;
  Tensor base = RandomTensor({1, t, 8}, 4);
  AttentionMask mask = CausalMask(0);
  Tensor before = layout_->Forward(Input(Var(base), mask)).value();
  for (int64_t cut = 1; cut < t; ++cut) {
    Tensor changed = base.Clone();
    Tensor noise = RandomTensor({1, t, 8}, 100 + cut, -3.0f, 3.0f);
    for (int64_t i = cut * 8; i < t * 8; ++i) changed.data()[i] = noise.data()[i];
    Tensor after = layout_->Forward(Input(Var(changed), mask)).value();
    for (int64_t i = 0; i < cut * 8; ++i)
      ASSERT_EQ(before.data()[i], after.data()[i]) << "position " << i / 8 << " saw a change at >= " << cut;
  }
}

TEST_P(AttentionConformance, PaddedSequenceMatchesTheSequenceAlone) {
  SKIP_FOR_MIXER(kCausalOnly);
  // Sequence 0 has 3 real tokens padded to 5 and shares a batch with another.
  Tensor batch = RandomTensor({2, 5, 8}, 5);
  AttentionMask mask = KeyPaddingMask({3, 5});
  Tensor padded = layout_->Forward(Input(Var(batch), mask)).value();
  Tensor alone_in = Tensor::Zeros({1, 3, 8});
  std::copy(batch.data(), batch.data() + 24, alone_in.data());
  Tensor alone = layout_->Forward(Input(Var(alone_in))).value();
  for (int64_t i = 0; i < 24; ++i) EXPECT_NEAR(padded.data()[i], alone.data()[i], 1e-5) << i;
  // Changing the padding's content changes nothing real.
  Tensor other = batch.Clone();
  for (int64_t i = 24; i < 40; ++i) other.data()[i] = 9.0f;
  Tensor repadded = layout_->Forward(Input(Var(other), mask)).value();
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(padded.data()[i], repadded.data()[i]) << i;
}

TEST_P(AttentionConformance, GradientsMatchFiniteDifferences) {
  Var x = RandomVar({1, 4, 8}, 6);
  AttentionMask mask = CausalMask(0);
  std::vector<Var> inputs = {x};
  for (Var& p : ParameterVars(*layout_)) inputs.push_back(p);
  for (Var& p : ParameterVars(*score_)) inputs.push_back(p);
  // Mixers normalise each head's hs outputs (GLA's RMSNorm, RetNet's group
  // norm) of a product of three projections, curved enough at hs = 4 that
  // the default step's O(step^2) error exceeds the tolerance; a finer step
  // stays well above float32 rounding. (Their gradients are also checked
  // against PyTorch's float64 ones to 1e-5 in <name>_parity.py.)
  GradCheckOptions options;
  if (mixer_) options.epsilon = 2e-3f;
  GradCheckResult r = GradCheck(
      [&](const std::vector<Var>& v) { return Project(layout_->Forward(Input(v[0], mask))); },
      inputs, options);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST_P(AttentionConformance, DeterministicIncludingDropout) {
  SKIP_FOR_MIXER(kNoWeights);
  ModelDims dims = dims_;
  dims.dropout = 0.3f;
  auto layout = MakeAttentionLayout(std::get<0>(GetParam()), dims);
  Var x = RandomVar({2, 4, 8}, 7);
  AttentionInput in = Input(x);
  in.ctx = {true, 11, 3};
  Tensor a = layout->Forward(in).value(), b = layout->Forward(in).value();
  EXPECT_EQ(a.ToVector(), b.ToVector());
  in.ctx.step = 4;  // a new step draws a new mask
  EXPECT_NE(a.ToVector(), layout->Forward(in).value().ToVector());
}

TEST_P(AttentionConformance, EveryBackendMatchesReference) {
  Var x = RandomVar({2, 5, 8}, 8);
  AttentionMask mask = CausalMask(0);
  Tensor want;
  {
    ScopedBackend ref("reference");
    want = layout_->Forward(Input(x, mask)).value();
  }
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    EXPECT_LE(MaxAbsDiff(layout_->Forward(Input(x, mask)).value(), want), 1e-5f) << backend;
  }
}

// The rows [start, start + length) of x (B, T, C) along T.
Var Rows(const Tensor& x, int64_t start, int64_t length) {
  return Slice(Var(x), 1, start, length);
}

// Decodes x in chunks (prefill 2 tokens, then 1, 2 and 1) through a KV cache
// and checks every chunk against the same rows of a full causal forward.
// Runs for each linked position plugin, so rotary offsets are covered too.
TEST_P(AttentionConformance, IncrementalSelfAttentionMatchesFullRecompute) {
  SKIP_FOR_MIXER(kStateNotTokens);
  const int64_t t = 6, c = 8;
  Tensor x = RandomTensor({2, t, c}, 9);
  for (const std::string& position_name : PositionsUsableWith(std::get<0>(GetParam()))) {
    auto position = MakePositionEncoding(position_name, dims_);
    AttentionInput full = Input(Var(x), CausalMask(0));
    full.position = position.get();
    Tensor want = layout_->Forward(full).value();  // (B, T, C)
    KvCache cache;
    std::map<std::string, Tensor> prefill;  // the cache after the first chunk
    int64_t offset = 0;
    for (int64_t chunk : {2, 1, 2, 1}) {
      AttentionInput step =
          Input(Rows(x, offset, chunk), CausalMask(offset));
      step.position = position.get();
      step.position_offset = offset;
      step.cache = &cache;
      Tensor got = layout_->Forward(step).value();  // (B, chunk, C)
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t i = 0; i < chunk * c; ++i)
          ASSERT_NEAR(got.data()[n * chunk * c + i], want.data()[(n * t + offset) * c + i], 1e-5)
              << position_name << ": row " << n << ", token " << offset + i / c;
      offset += chunk;
      ASSERT_EQ(cache.length(), offset) << position_name;
      if (prefill.empty()) {
        for (const std::string& name : cache.Names()) prefill[name] = cache.Get(name).Clone();
      }
    }
    // Appending tokens never changes what was cached for earlier ones.
    ASSERT_FALSE(prefill.empty()) << "the layout stored nothing in the KV cache";
    for (const auto& [name, then] : prefill) {
      const int dim = cache.TokenDim(name);
      Tensor now = Slice(Var(cache.Get(name)), dim, 0, then.dim(dim)).value();
      EXPECT_EQ(now.ToVector(), then.ToVector()) << position_name << ": entry " << name;
    }
  }
}

// Queries arrive one at a time; the source (with padding) is projected once:
// after the first call the memory passed in is replaced by zeros, and the
// outputs must still match a full cross-attention forward.
TEST_P(AttentionConformance, IncrementalCrossAttentionMatchesFullRecompute) {
  SKIP_FOR_MIXER(kSelfOnly);
  const int64_t t = 4, s = 7, c = 8;
  Tensor x = RandomTensor({2, t, c}, 10);
  Var memory = RandomVar({2, s, c}, 11);
  AttentionInput full = Input(Var(x), KeyPaddingMask({s, 4}));
  full.memory = memory;
  Tensor want = layout_->Forward(full).value();  // (B, T, C)
  KvCache cache;
  for (int64_t i = 0; i < t; ++i) {
    AttentionInput step = Input(Rows(x, i, 1), KeyPaddingMask({s, 4}));
    step.memory = i == 0 ? memory : Var(Tensor::Zeros({2, s, c}));
    step.position_offset = i;
    step.cache = &cache;
    Tensor got = layout_->Forward(step).value();  // (B, 1, C)
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t j = 0; j < c; ++j)
        ASSERT_NEAR(got.data()[n * c + j], want.data()[(n * t + i) * c + j], 1e-5)
            << "row " << n << ", query " << i;
    EXPECT_EQ(cache.length(), s);
  }
}

// Positions relate a sequence to itself: no position plugin (rotation or
// logit bias) changes cross-attention, whose keys come from another sequence.
TEST_P(AttentionConformance, CrossAttentionIgnoresPositionEncodings) {
  SKIP_FOR_MIXER(kSelfOnly);
  AttentionInput cross = Input(RandomVar({2, 3, 8}, 20));
  cross.memory = RandomVar({2, 5, 8}, 21);
  cross.position_offset = 2;
  const Tensor without = layout_->Forward(cross).value();
  for (const std::string& name : PositionsUsableWith(std::get<0>(GetParam()))) {
    auto position = MakePositionEncoding(name, dims_);
    cross.position = position.get();
    EXPECT_EQ(layout_->Forward(cross).value().ToVector(), without.ToVector()) << name;
  }
}

// A layout's capability declarations are true: if it says it applies rotary
// positions or logit biases, every linked position plugin that needs one
// changes its self-attention output; if it does not say so, validation keeps
// such plugins away from it (spec_loader_test).
TEST_P(AttentionConformance, DeclaredCapabilitiesAreHonoured) {
  const uint32_t provides = (*AttentionLayoutRegistry().Get(std::get<0>(GetParam())))->capabilities;
  Var x = RandomVar({1, 5, 8}, 22);
  // A recurrent mixer is causal only (and declares neither capability).
  const AttentionMask mask = mixer_ ? CausalMask(0) : AttentionMask();
  const Tensor plain = layout_->Forward(Input(x, mask)).value();
  int checked = 0;
  for (const std::string& name : PositionsUsableWith(std::get<0>(GetParam()))) {
    const uint32_t needs = (*PositionEncodingRegistry().Get(name))->capabilities;
    const bool rotation = (needs & kRotatesQueriesAndKeys) && (provides & kAppliesRotaryPositions);
    const bool bias = (needs & kAddsLogitBias) && (provides & kAppliesLogitBias);
    if (!rotation && !bias) continue;
    auto position = MakePositionEncoding(name, dims_);
    AttentionInput in = Input(x, mask);
    in.position = position.get();
    EXPECT_GT(MaxAbsDiff(layout_->Forward(in).value(), plain), 1e-4f)
        << "the layout declares it applies what '" << name << "' needs, but its output ignores it";
    ++checked;
  }
  RecordProperty("position_plugins_checked", checked);
}

// What a layout reports per token is what it actually stores.
TEST_P(AttentionConformance, KvCacheHoldsWhatTheLayoutReports) {
  SKIP_FOR_MIXER(kStateNotTokens);
  const int64_t b = 2, t = 3, s = 5;
  KvCache self_cache;
  for (int64_t i = 0; i < t; ++i) {
    AttentionInput step = Input(RandomVar({b, 1, 8}, 20 + i), CausalMask(i));
    step.position_offset = i;
    step.cache = &self_cache;
    layout_->Forward(step);
    EXPECT_EQ(self_cache.Bytes(2), b * (i + 1) * layout_->KvCacheBytesPerToken(2))
        << "after " << i + 1 << " tokens";
  }
  KvCache cross_cache;
  AttentionInput cross = Input(RandomVar({b, t, 8}, 30));
  cross.memory = RandomVar({b, s, 8}, 31);
  cross.cache = &cross_cache;
  layout_->Forward(cross);
  EXPECT_EQ(cross_cache.Bytes(2), b * s * layout_->KvCacheBytesPerToken(2));
}

TEST_P(AttentionConformance, ReportsAPositiveKvCacheSize) {
  SKIP_FOR_MIXER(kStateNotTokens);
  EXPECT_GT(layout_->KvCacheBytesPerToken(2), 0);
  EXPECT_EQ(layout_->KvCacheBytesPerToken(4), 2 * layout_->KvCacheBytesPerToken(2));
}

// A score is fusable exactly when its capability says so (validation's
// memory estimate reads the capability; Attend the virtual).
TEST_P(AttentionConformance, FusableCapabilityMatchesTheScore) {
  const uint32_t caps = PluginKindById("attention_score").capabilities(std::get<1>(GetParam()));
  EXPECT_EQ((caps & kFusableScore) != 0, score_->FusedDotProductScale().has_value());
}

// Output and every gradient (input, layout, score and position parameters:
// a bucketed bias's table) of one forward + backward, for the
// fused-vs-unfused comparison.
std::vector<Tensor> OutputAndGradients(const AttentionLayout& layout, const AttentionScore& score,
                                       const AttentionInput& in) {
  std::vector<Var> inputs = {in.x};
  if (in.memory.defined()) inputs.push_back(in.memory);
  for (Var& p : ParameterVars(layout)) inputs.push_back(p);
  for (Var& p : ParameterVars(score)) inputs.push_back(p);
  if (in.position != nullptr)
    for (Var& p : ParameterVars(*in.position)) inputs.push_back(p);
  for (Var& v : inputs) v.mutable_grad() = Tensor();
  Var y = layout.Forward(in);
  Backward(Project(y));
  std::vector<Tensor> out = {y.value().Clone()};
  for (Var& v : inputs) out.push_back(v.grad().defined() ? v.grad().Clone() : Tensor());
  return out;
}

// The masks the path comparisons run under: none, causal, causal with key
// padding, and key padding where batch row 1 sees no key at all.
std::vector<std::pair<std::string, AttentionMask>> ComparedMasks() {
  AttentionMask padded_causal = CausalMask(0);
  padded_causal.key_lengths = {6, 2};
  return {{"none", AttentionMask()},
          {"causal", CausalMask(0)},
          {"causal+padding", padded_causal},
          {"padding", KeyPaddingMask({4, 0})}};
}

void AttentionConformance::ForEachComparedInput(
    const ModelDims& dims,
    const std::function<void(const AttentionInput&, const std::string&)>& compare) const {
  const auto masks = ComparedMasks();
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    for (const std::string& position_name : PositionsUsableWith(std::get<0>(GetParam()))) {
      auto position = MakePositionEncoding(position_name, dims);
      for (const auto& [mask_name, mask] : masks)
        for (bool cross : {false, true})
          for (bool training : {false, true}) {
            AttentionInput in = Input(RandomVar({2, 6, 8}, 21), mask);
            in.position = position.get();
            if (cross) in.memory = RandomVar({2, 6, 8}, 22);
            if (training) in.ctx = {true, 5, 9};
            compare(in, backend + ", " + position_name + ", mask " + mask_name +
                            (cross ? ", cross" : ", self") +
                            (training ? ", training with dropout" : ""));
          }
    }
  }
}

// The fused attention kernel against the unfused composition (its oracle),
// forward and gradient, for every linked position plugin x mask x self or
// cross attention x training with dropout, on every host backend: equal to
// 1e-5 relative. The fused path must really run when the score declares
// itself fusable (and never otherwise).
TEST_P(AttentionConformance, FusedAttentionMatchesUnfused) {
  SKIP_FOR_MIXER("never fuses (kNeverFusesLayout) and takes no cross-attention or non-causal mask");
  ModelDims dims = dims_;
  dims.dropout = 0.25f;
  auto layout = MakeAttentionLayout(std::get<0>(GetParam()), dims);
  const bool layout_fuses =
      !((*AttentionLayoutRegistry().Get(std::get<0>(GetParam())))->capabilities & kNeverFusesLayout);
  const bool fusable = score_->FusedDotProductScale().has_value() && layout_fuses;
  ForEachComparedInput(dims, [&](const AttentionInput& in, const std::string& where) {
    const int64_t calls_before = FusedAttentionCalls();
    SetAttentionKernel(AttentionKernel::kFused);
    std::vector<Tensor> fused = OutputAndGradients(*layout, *score_, in);
    const bool took_fused = FusedAttentionCalls() > calls_before;
    SetAttentionKernel(AttentionKernel::kUnfused);
    std::vector<Tensor> unfused = OutputAndGradients(*layout, *score_, in);
    SetAttentionKernel(AttentionKernel::kAuto);
    EXPECT_EQ(FusedAttentionCalls() > calls_before, took_fused) << where;
    if (!fusable) {
      EXPECT_FALSE(took_fused) << where;
    }
    ExpectSameOutputAndGradients(fused, unfused, where);
  });
  if (!fusable) return;
  // The scaled dot products fuse with every linked position but none.
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    AttentionInput in = Input(RandomVar({2, 6, 8}, 21), CausalMask(0));
    const int64_t before = FusedAttentionCalls();
    SetAttentionKernel(AttentionKernel::kFused);
    layout->Forward(in);
    SetAttentionKernel(AttentionKernel::kAuto);
    EXPECT_GT(FusedAttentionCalls(), before) << backend << ": the fused kernel never ran";
  }
}

// The query-chunked composition (checkpointed chunks, attend.h) against the
// whole one, forward and gradient, over the same cross product. Chunks of 4
// of the 6 queries (4 + 2) put a chunk boundary inside every mask and
// position bias; dropout must draw the whole tensor's mask.
TEST_P(AttentionConformance, QueryChunkedMatchesWhole) {
  SKIP_FOR_MIXER("does not call Attend, so there are no query chunks");
  ModelDims dims = dims_;
  dims.dropout = 0.25f;
  auto layout = MakeAttentionLayout(std::get<0>(GetParam()), dims);
  ForEachComparedInput(dims, [&](const AttentionInput& in, const std::string& where) {
    const int64_t calls_before = QueryChunkedAttentionCalls();
    SetQueryChunkRowsForTesting(4);  // 6 queries: 6 x 6 pairs stay below the fused threshold
    std::vector<Tensor> chunked = OutputAndGradients(*layout, *score_, in);
    SetQueryChunkRowsForTesting(0);
    EXPECT_GT(QueryChunkedAttentionCalls(), calls_before) << where << ": no chunked call";
    SetAttentionKernel(AttentionKernel::kUnfused);
    std::vector<Tensor> whole = OutputAndGradients(*layout, *score_, in);
    SetAttentionKernel(AttentionKernel::kAuto);
    ExpectSameOutputAndGradients(chunked, whole, where);
  });
}

INSTANTIATE_TEST_SUITE_P(Registered, AttentionConformance, ::testing::ValuesIn(AllPairs()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

TEST(AttentionRegistries, AreNotEmpty) {
  EXPECT_FALSE(AttentionLayoutRegistry().Names().empty());
  EXPECT_FALSE(AttentionScoreRegistry().Names().empty());
}

}  // namespace
}  // namespace tvlab
