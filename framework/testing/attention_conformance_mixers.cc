// The recurrent mixers (layouts declaring kRecurrentMixer: linear
// attention, GLA, RetNet; docs/mixers.md) linked into the test binary,
// beside attention_conformance.cc in the same suite, which skips its
// softmax-only cases for them. Each mixer computes the gated linear kernel
// (framework/attention/gated_linear.h) in three forms that must agree to
// 1e-5 relative, outputs and every gradient, on every host backend:
// parallel (the oracle), chunked over several chunk sizes (T = 7 is a
// multiple of none but 1 and 7) and recurrent; decoding one token at a time
// (and after a prefill) through the cache equals the full forward while
// the state's bytes stay constant; and key padding at the end of a row
// changes no real token.

#include <string>
#include <vector>

#include "framework/attention/gated_linear.h"
#include "framework/attention/kv_cache.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/capabilities.h"
#include "framework/testing/census.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<std::string> Mixers() {
  std::vector<std::string> out;
  for (const auto& layout : PluginsUnderTest("attention_layout"))
    if (IsRecurrentMixer(layout)) out.push_back(layout);
  return out;
}

class MixerConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dims_ = SmallDims();
    layout_ = MakeAttentionLayout(GetParam(), dims_);
    score_ = MakeAttentionScore("scaled_dot_product", dims_);
  }
  void TearDown() override { SetMixerFormForTesting(MixerForm::kChunked, 0); }
  AttentionInput Input(const Var& x, const AttentionMask& mask) const {
    AttentionInput in;
    in.x = x;
    in.mask = mask;
    in.score = score_.get();
    return in;
  }
  // Output and the gradients of x and every layout parameter under `form`.
  std::vector<Tensor> Run(MixerForm form, int64_t chunk, const AttentionInput& in) const {
    SetMixerFormForTesting(form, chunk);
    std::vector<Var> inputs = {in.x};
    for (Var& p : ParameterVars(*layout_)) inputs.push_back(p);
    for (Var& v : inputs) v.mutable_grad() = Tensor();
    Var y = layout_->Forward(in);  // (B, T, C)
    Backward(Project(y));
    SetMixerFormForTesting(MixerForm::kChunked, 0);
    std::vector<Tensor> out = {y.value().Clone()};
    for (Var& v : inputs) out.push_back(v.grad().defined() ? v.grad().Clone() : Tensor());
    return out;
  }

  ModelDims dims_;
  std::unique_ptr<AttentionLayout> layout_;
  std::unique_ptr<AttentionScore> score_;
};

TEST_P(MixerConformance, ParallelChunkedAndRecurrentFormsAgree) {
  AttentionMask mask = CausalMask(0);
  mask.key_lengths = {7, 5};
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    AttentionInput in = Input(RandomVar({2, 7, 8}, 31), mask);  // (B, T, C)
    const std::vector<Tensor> oracle = Run(MixerForm::kParallel, 0, in);
    for (int64_t chunk : {1, 2, 3, 4, 7, 16})
      ExpectSameOutputAndGradients(Run(MixerForm::kChunked, chunk, in), oracle,
                                   backend + ", chunked, chunk " + std::to_string(chunk), 1e-5f);
    ExpectSameOutputAndGradients(Run(MixerForm::kRecurrent, 0, in), oracle, backend + ", recurrent",
                                 1e-5f);
  }
}

// Prefill then single tokens, and one token at a time throughout: every
// step equals the same rows of the full forward; the cache counts the
// tokens and its bytes never grow.
TEST_P(MixerConformance, DecodingThroughTheStateMatchesTheFullForward) {
  const int64_t b = 2, t = 7, c = 8;
  Tensor x = RandomTensor({b, t, c}, 32);
  const Tensor want = layout_->Forward(Input(Var(x), CausalMask(0))).value();  // (B, T, C)
  for (const std::vector<int64_t>& steps : {std::vector<int64_t>{3, 1, 1, 2},
                                            std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1}}) {
    KvCache cache;
    int64_t offset = 0;
    for (int64_t n : steps) {
      AttentionInput in = Input(Slice(Var(x), 1, offset, n), CausalMask(offset));
      in.position_offset = offset;
      in.cache = &cache;
      const Tensor got = layout_->Forward(in).value();  // (B, n, C)
      const Tensor rows = Slice(Var(want), 1, offset, n).value();
      EXPECT_LE(MaxAbsDiff(got, rows), 1e-5f * (1.0f + MaxAbsDiff(rows, Tensor::Zeros(rows.shape()))))
          << "tokens " << offset << ".." << offset + n - 1 << " after steps of " << steps[0];
      offset += n;
      ASSERT_EQ(cache.length(), offset);
      EXPECT_EQ(cache.Bytes(4), b * layout_->RecurrentStateBytes(4)) << "after " << offset << " tokens";
    }
  }
}

// Row 1 has 4 real tokens of 7: they equal the row alone, and changing the
// padding's content changes none of them.
TEST_P(MixerConformance, KeyPaddingChangesNoRealToken) {
  Tensor batch = RandomTensor({2, 7, 8}, 33);
  AttentionMask mask = CausalMask(0);
  mask.key_lengths = {7, 4};
  const Tensor padded = layout_->Forward(Input(Var(batch), mask)).value();  // (B, T, C)
  const Tensor alone = layout_->Forward(Input(Slice(Slice(Var(batch), 0, 1, 1), 1, 0, 4), CausalMask(0))).value();
  const Tensor real = Slice(Slice(Var(padded), 0, 1, 1), 1, 0, 4).value();  // (1, 4, C)
  EXPECT_LE(MaxAbsDiff(real, alone), 1e-5f);
  Tensor noise = RandomTensor({1, 3, 8}, 34, -3.0f, 3.0f);
  Var changed = Concat({Slice(Var(batch), 0, 0, 1),
                        Concat({Slice(Slice(Var(batch), 0, 1, 1), 1, 0, 4), Var(noise)}, 1)}, 0);
  const Tensor repadded = layout_->Forward(Input(changed, mask)).value();
  EXPECT_EQ(Slice(Slice(Var(repadded), 0, 1, 1), 1, 0, 4).value().ToVector(), real.ToVector());
}

// A fixed state, honestly reported: nothing per token, a positive state,
// and the declarations validation relies on.
TEST_P(MixerConformance, ReportsAFixedStateAndNoKvCache) {
  EXPECT_EQ(layout_->KvCacheBytesPerToken(2), 0);
  EXPECT_GT(layout_->RecurrentStateBytes(2), 0);
  EXPECT_EQ(layout_->RecurrentStateBytes(4), 2 * layout_->RecurrentStateBytes(2));
  const uint32_t caps = (*AttentionLayoutRegistry().Get(GetParam()))->capabilities;
  EXPECT_TRUE(caps & kNeverFusesLayout) << "a mixer never runs the fused softmax kernel";
  EXPECT_FALSE(caps & (kAppliesRotaryPositions | kAppliesLogitBias | kAttendsOnceWithNewValues));
}

INSTANTIATE_TEST_SUITE_P(Registered, MixerConformance, ::testing::ValuesIn(Mixers()),
                         [](const auto& info) { return info.param; });
// Softmax layouts' conformance binaries link no mixer.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MixerConformance);

}  // namespace
}  // namespace tvlab
