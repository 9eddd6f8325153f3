// Sliding-window attention (model.attention.window, AttentionMask::window)
// for every (attention layout, attention score) pair linked into the test
// binary, beside attention_conformance.cc in the same suite: the window
// reaches the weights, the fused kernel equals the unfused composition under
// it, and decoding through a KV cache that keeps only the last W tokens
// equals recomputing the whole prefix with the window, past T > W, for every
// linked position plugin (RoPE's rotated keys, ALiBi's distances). Both also
// with the attention options that meet a window (attention_extras.h): the
// soft-cap and a learned sink (inside the fused kernel, which skips the
// band's outside) and QK-norm (applied before the keys are cached).

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "framework/attention/attend.h"
#include "framework/attention/attention_extras.h"
#include "framework/attention/kv_cache.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend_registry.h"
#include "framework/testing/census.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using Pair = std::tuple<std::string, std::string>;  // (layout, score)

std::vector<Pair> AllPairs() {
  std::vector<Pair> pairs;
  for (const auto& layout : PluginsUnderTest("attention_layout"))
    for (const auto& score : PluginsUnderTest("attention_score")) pairs.emplace_back(layout, score);
  return pairs;
}

AttentionMask Windowed(AttentionMask mask, int64_t window) {
  mask.window = window;
  return mask;
}

class AttentionWindowConformance : public ::testing::TestWithParam<Pair> {
 protected:
  void SetUp() override {
    if (IsRecurrentMixer(std::get<0>(GetParam())))
      GTEST_SKIP() << "recurrent mixer: validation refuses windows with it (mixer_spec.cc)";
    dims_ = SmallDims();
    layout_ = MakeAttentionLayout(std::get<0>(GetParam()), dims_);
    score_ = MakeAttentionScore(std::get<1>(GetParam()), dims_);
  }
  AttentionInput Input(const Var& x, const AttentionMask& mask) const {
    AttentionInput in;
    in.x = x;
    in.mask = mask;
    in.score = score_.get();
    in.extras = extras_.get();
    return in;
  }
  // Soft-cap (small enough to bend these logits), a learned sink and
  // RMS QK-norm on every following Input, their parameters away from their
  // initial values (scales 1, sinks 0) so that a wrong use of one shows.
  void UseSoftCapSinkAndQkNorm() {
    AttentionOptions options;
    options.logit_softcap = 0.25f;
    options.sink = AttentionOptions::Sink::kLearned;
    // A layout that attends with fewer heads takes no learned sink.
    if (!AttentionOptionsUsableWith(std::get<0>(GetParam()), options))
      options.sink = AttentionOptions::Sink::kOffByOne;
    options.qk_norm = AttentionOptions::QkNorm::kRmsNorm;
    extras_ = std::make_unique<AttentionExtras>(options, dims_);
    uint64_t salt = 950;
    for (Var& p : ParameterVars(*extras_))
      p.mutable_value() = RandomTensor(p.shape(), salt++, 0.5f, 1.5f);
  }
  // The output, then every gradient (input, layout, score, options), flat.
  std::vector<float> OutputAndGradients(const AttentionInput& in) {
    std::vector<Var> inputs = {in.x};
    for (Var& p : ParameterVars(*layout_)) inputs.push_back(p);
    for (Var& p : ParameterVars(*score_)) inputs.push_back(p);
    if (extras_ != nullptr)
      for (Var& p : ParameterVars(*extras_)) inputs.push_back(p);
    for (Var& v : inputs) v.mutable_grad() = Tensor();
    Var y = layout_->Forward(in);
    Backward(Project(y));
    std::vector<float> all = y.value().ToVector();
    for (Var& v : inputs)
      if (v.grad().defined())
        for (float g : v.grad().ToVector()) all.push_back(g);
    return all;
  }
  // Fused against unfused (forward and every gradient) under windowed
  // masks, for every linked position plugin and host backend, at 1e-5
  // relative; returns how many fused runs took the fused kernel.
  int ExpectFusedMatchesUnfused(const std::vector<std::pair<std::string, AttentionMask>>& masks);
  // Decoding through a KV cache with a window W (prefill longer than W, then
  // single tokens and pairs past T > W) against a full windowed forward.
  void ExpectWindowedDecodingMatchesRecompute();

  ModelDims dims_;
  std::unique_ptr<AttentionLayout> layout_;
  std::unique_ptr<AttentionScore> score_;
  std::unique_ptr<AttentionExtras> extras_;  // null: no attention options
};

int AttentionWindowConformance::ExpectFusedMatchesUnfused(
    const std::vector<std::pair<std::string, AttentionMask>>& masks) {
  int fused_runs = 0;
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    for (const std::string& position_name : PositionsUsableWith(std::get<0>(GetParam()))) {
      auto position = MakePositionEncoding(position_name, dims_);
      for (const auto& [mask_name, mask] : masks) {
        AttentionInput in = Input(RandomVar({2, 9, 8}, 42), mask);
        in.position = position.get();
        const int64_t calls_before = FusedAttentionCalls();
        SetAttentionKernel(AttentionKernel::kFused);
        const std::vector<float> fused = OutputAndGradients(in);
        fused_runs += FusedAttentionCalls() > calls_before;
        SetAttentionKernel(AttentionKernel::kUnfused);
        const std::vector<float> unfused = OutputAndGradients(in);
        SetAttentionKernel(AttentionKernel::kAuto);
        EXPECT_EQ(fused.size(), unfused.size());
        if (fused.size() != unfused.size()) return fused_runs;
        float scale = 1e-2f;
        for (float v : unfused) scale = std::max(scale, std::fabs(v));
        for (size_t i = 0; i < fused.size(); ++i) {
          EXPECT_NEAR(fused[i], unfused[i], 1e-5f * scale)
              << backend << ", " << position_name << ", " << mask_name << ", value " << i;
          if (std::fabs(fused[i] - unfused[i]) > 1e-5f * scale) return fused_runs;
        }
      }
    }
  }
  return fused_runs;
}

void AttentionWindowConformance::ExpectWindowedDecodingMatchesRecompute() {
  const int64_t t = 11, c = 8, w = 3;
  Tensor x = RandomTensor({2, t, c}, 43);
  for (const std::string& position_name : PositionsUsableWith(std::get<0>(GetParam()))) {
    auto position = MakePositionEncoding(position_name, dims_);
    AttentionInput full = Input(Var(x), Windowed(CausalMask(0), w));
    full.position = position.get();
    const Tensor want = layout_->Forward(full).value();  // (B, T, C)
    KvCache cache;
    int64_t offset = 0;
    for (int64_t chunk : {4, 1, 2, 1, 1, 2}) {
      AttentionInput step = Input(Slice(Var(x), 1, offset, chunk), Windowed(CausalMask(offset), w));
      step.position = position.get();
      step.position_offset = offset;
      step.cache = &cache;
      const Tensor got = layout_->Forward(step).value();  // (B, chunk, C)
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t i = 0; i < chunk * c; ++i)
          ASSERT_NEAR(got.data()[n * chunk * c + i], want.data()[(n * t + offset) * c + i], 1e-5)
              << position_name << ": row " << n << ", token " << offset + i / c;
      offset += chunk;
      EXPECT_EQ(cache.length(), std::min(offset, w)) << position_name;
      EXPECT_EQ(cache.Bytes(2), 2 * std::min(offset, w) * layout_->KvCacheBytesPerToken(2))
          << position_name << ": the cache holds more than the window";
      for (const std::string& name : cache.Names()) EXPECT_EQ(cache.Seen(name), offset);
    }
  }
}

// The weights the layout reports are zero exactly outside the window:
// causal p - W < j <= p, bidirectional |p - j| < W (with key padding).
TEST_P(AttentionWindowConformance, WeightsAreZeroExactlyOutsideTheWindow) {
  const int64_t t = 7, w = 3;
  for (bool causal : {true, false}) {
    AttentionMask mask = causal ? CausalMask(0) : KeyPaddingMask({7, 5});
    mask.window = w;
    std::vector<Tensor> seen;
    AttentionProbe probe = [&](const std::string&, const Tensor& x) { seen.push_back(x.Clone()); };
    AttentionInput in = Input(RandomVar({2, t, 8}, 41), mask);
    in.probe = &probe;
    layout_->Forward(in);
    ASSERT_FALSE(seen.empty());
    const Tensor& weights = seen[0];  // (B, H, T, S)
    const int64_t h = weights.dim(1);
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t hd = 0; hd < h; ++hd)
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = 0; j < t; ++j) {
            const int64_t length = causal ? t : (n == 0 ? 7 : 5);
            const bool inside = causal ? (j <= i && i - j < w) : (std::abs(i - j) < w && j < length);
            const float v = weights.data()[((n * h + hd) * t + i) * t + j];
            if (inside) {
              EXPECT_GT(v, 0.0f) << (causal ? "causal" : "bidirectional") << " " << i << "," << j;
            } else {
              EXPECT_EQ(v, 0.0f) << (causal ? "causal" : "bidirectional") << " " << i << "," << j;
            }
          }
  }
}

TEST_P(AttentionWindowConformance, FusedMatchesUnfusedUnderAWindow) {
  AttentionMask padded = CausalMask(0);
  padded.key_lengths = {9, 4};
  ExpectFusedMatchesUnfused({{"causal W=3", Windowed(CausalMask(0), 3)},
                             {"causal W=1", Windowed(CausalMask(0), 1)},
                             {"causal W>T", Windowed(CausalMask(0), 20)},
                             {"causal+padding W=4", Windowed(padded, 4)},
                             {"bidirectional W=2", Windowed(KeyPaddingMask({9, 6}), 2)}});
}

// The same with the soft-cap, a learned sink and QK-norm; row 1 of the
// padded masks has keys only before the band of its later queries, which
// then see nothing but the sink (zero output, gradient into the sink).
TEST_P(AttentionWindowConformance, FusedMatchesUnfusedUnderAWindowWithSoftCapAndSink) {
  UseSoftCapSinkAndQkNorm();
  AttentionMask padded = CausalMask(0);
  padded.key_lengths = {9, 2};  // row 1, queries 4..8 with W = 3: no key
  const int fused_runs =
      ExpectFusedMatchesUnfused({{"causal W=3", Windowed(CausalMask(0), 3)},
                                 {"causal W=1", Windowed(CausalMask(0), 1)},
                                 {"causal+padding W=3", Windowed(padded, 3)},
                                 {"bidirectional W=2", Windowed(KeyPaddingMask({9, 0}), 2)}});
  if (score_->FusedDotProductScale().has_value()) {
    EXPECT_GT(fused_runs, 0) << "the fused kernel never ran";
  } else {
    EXPECT_EQ(fused_runs, 0);
  }
}

// Every chunk equals the same rows of a full windowed forward, and the
// cache never holds more than W tokens.
TEST_P(AttentionWindowConformance, WindowedKvCacheDecodingMatchesFullRecompute) {
  ExpectWindowedDecodingMatchesRecompute();
}

// The same with the soft-cap, a learned sink and QK-norm: the sink and the
// cap do not depend on key positions, and keys are normalised before they
// are cached, so the W held keys give the recomputed rows.
TEST_P(AttentionWindowConformance, WindowedKvCacheDecodingWithSoftCapAndSinkMatchesRecompute) {
  UseSoftCapSinkAndQkNorm();
  ExpectWindowedDecodingMatchesRecompute();
}

INSTANTIATE_TEST_SUITE_P(Registered, AttentionWindowConformance, ::testing::ValuesIn(AllPairs()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace tvlab
