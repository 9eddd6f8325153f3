// T5 bias through the fused attention kernel (FusedAttentionDesc::bucket_bias)
// against the unfused composition, on every host backend: logits and every
// gradient (q, k, v and the bias table) within 1e-5 relative, for causal and
// bidirectional stacks, with and without a window, at sequence lengths past
// the exact buckets; and KV-cache decoding (query offsets, a window's held
// keys) on the fused path equal to the full unfused sequence. Attend is
// called directly with a plain dot-product score defined here.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/attention/attend.h"
#include "framework/attention/kv_cache.h"
#include "framework/autograd/ops.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/position/t5_bias/t5_bias.pb.h"

namespace tvlab {
namespace {

class FusableScaledDot : public AttentionScore {
 public:
  Var Logits(const Var& q, const Var& k) const override {  // (B, H, T, S)
    return Scale(MatMul(q, k, false, true), 0.5f);
  }
  std::optional<float> FusedDotProductScale() const override { return 0.5f; }
};

struct StackCase {
  bool causal;
  int64_t window;
  std::string name() const {
    return std::string(causal ? "causal" : "bidirectional") +
           (window > 0 ? ", window " + std::to_string(window) : "");
  }
};

// A t5_bias of 16 buckets, max distance 24 (exact below 8 causal, 4 per
// direction bidirectional), for H = 2 heads; the table random.
std::unique_ptr<PositionEncoding> MakeT5(bool causal) {
  ModelDims dims = SmallDims();  // H = 2
  dims.causal = causal;
  T5BiasOptions options;
  options.set_num_buckets(16);
  options.set_max_distance(24);
  const auto* entry = *PositionEncodingRegistry().Get("t5_bias");
  EXPECT_TRUE(entry->validate(options, dims).ok());
  auto t5 = entry->create(options, dims);
  InitializeParameters(*t5, 5);
  return t5;
}

Var RandomInput(const Shape& shape, uint64_t salt) {
  return RandomVar(shape, salt);
}

struct PathResult {
  Tensor out;
  std::vector<Tensor> grads;  // q, k, v, table
};

// Attend over q (B, H, T, hs), k, v (B, G, S, hs) and its gradients under
// `policy`, projected to a scalar with fixed random weights.
PathResult AttendAndDifferentiate(AttentionKernel policy, const PositionEncoding& table,
                           const StackCase& setup, std::vector<Var> inputs) {
  FusableScaledDot score;
  Module owner;
  AttentionContext c;
  c.score = &score;
  c.owner = &owner;
  c.mask = setup.causal ? CausalMask(0) : AttentionMask();
  c.mask.key_lengths = {inputs[1].dim(2), inputs[1].dim(2) - 7};
  c.mask.window = setup.window;
  c.logit_bias = &table;
  Var weight = ParameterVars(table).at(0);
  inputs.push_back(weight);
  for (Var& v : inputs) v.mutable_grad() = Tensor();
  SetAttentionKernel(policy);
  Var out = Attend(inputs[0], inputs[1], inputs[2], c);  // (B, H, T, hs)
  SetAttentionKernel(AttentionKernel::kAuto);
  Backward(Project(out));
  PathResult run{out.value().Clone(), {}};
  for (Var& v : inputs) run.grads.push_back(v.grad().Clone());
  return run;
}

void ExpectClose(const Tensor& got, const Tensor& want, const std::string& what) {
  float scale = 1e-3f;
  for (float w : want.ToVector()) scale = std::max(scale, std::fabs(w));
  EXPECT_LE(MaxAbsDiff(got, want), 1e-5f * scale) << what;
}

TEST(T5BiasFused, FusedEqualsUnfusedWithTableGradient) {
  for (const StackCase& setup : {StackCase{true, 0}, StackCase{false, 0}, StackCase{true, 9}, StackCase{false, 9}}) {
    auto t5 = MakeT5(setup.causal);
    const PositionEncoding& table = t5->AtSite({setup.causal, 0});
    // 40 queries and keys: distances past max_distance, both bucket kinds.
    const std::vector<Var> inputs = {RandomInput({2, 2, 40, 8}, 1), RandomInput({2, 1, 40, 8}, 2),
                                     RandomInput({2, 1, 40, 8}, 3)};
    for (const std::string& backend : HostBackends()) {
      ScopedBackend scoped(backend);
      const std::string where = backend + ", " + setup.name();
      const int64_t before = FusedAttentionCalls();
      const PathResult fused = AttendAndDifferentiate(AttentionKernel::kFused, table, setup, inputs);
      EXPECT_EQ(FusedAttentionCalls(), before + 1) << where << ": the fused kernel did not run";
      const PathResult unfused = AttendAndDifferentiate(AttentionKernel::kUnfused, table, setup, inputs);
      EXPECT_EQ(FusedAttentionCalls(), before + 1) << where;
      ExpectClose(fused.out, unfused.out, where + ": output");
      const char* names[] = {"dq", "dk", "dv", "d table"};
      for (int i = 0; i < 4; ++i) ExpectClose(fused.grads[i], unfused.grads[i], where + ": " + names[i]);
      EXPECT_GT(MaxAbsDiff(unfused.grads[3], Tensor::Zeros(unfused.grads[3].shape())), 1e-4f)
          << where << ": the table gets a gradient";
    }
  }
}

// Prefill 5 tokens, then 1, 3, 1, ... on the fused path with a KV cache:
// equal to the whole causal sequence unfused (the bias's query offset; with
// a window, the held keys' restated offset).
TEST(T5BiasFused, KvCacheDecodingOnTheFusedPathEqualsTheFullSequence) {
  auto t5 = MakeT5(/*causal=*/true);
  const PositionEncoding& table = t5->AtSite({true, 0});
  FusableScaledDot score;
  Module owner;
  const int64_t t = 30;
  const Var q = RandomInput({1, 2, t, 8}, 4), k = RandomInput({1, 2, t, 8}, 5),
            v = RandomInput({1, 2, t, 8}, 6);
  for (int64_t window : {0, 6}) {
    for (const std::string& backend : HostBackends()) {
      ScopedBackend scoped(backend);
      const std::string where = backend + ", window " + std::to_string(window);
      AttentionContext c;
      c.score = &score;
      c.owner = &owner;
      c.logit_bias = &table;
      c.mask = CausalMask(0);
      c.mask.window = window;
      SetAttentionKernel(AttentionKernel::kUnfused);
      const Tensor full = Attend(q, k, v, c).value();  // (1, H, T, hs)
      SetAttentionKernel(AttentionKernel::kFused);
      KvCache cache;
      const int64_t before = FusedAttentionCalls();
      int calls = 0;
      for (int64_t first = 0, n = 5; first < t; first += n, n = n == 1 ? 3 : 1) {
        n = std::min(n, t - first);
        AttentionContext step = c;
        step.mask = CausalMask(first);
        step.mask.window = window;
        step.position_offset = first;
        step.cache = &cache;
        const Tensor got = Attend(Slice(q, 2, first, n), Slice(k, 2, first, n),
                                  Slice(v, 2, first, n), step).value();
        ExpectClose(got, Slice(Var(full), 2, first, n).value(),
                    where + ", tokens from " + std::to_string(first));
        ++calls;
      }
      SetAttentionKernel(AttentionKernel::kAuto);
      EXPECT_EQ(FusedAttentionCalls(), before + calls) << where << ": every step fused";
    }
  }
}

}  // namespace
}  // namespace tvlab
