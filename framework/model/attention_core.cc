#include "framework/model/attention_core.h"

#include <limits>

#include "framework/autograd/ops.h"
#include "framework/core/check.h"

namespace tvlab {

Var SplitHeads(const Var& x, int64_t heads) {
  const int64_t b = x.dim(0), t = x.dim(1), width = x.dim(2);
  TVLAB_CHECK(width % heads == 0) << width << " not divisible by " << heads;
  Var split = Reshape(x, {b, t, heads, width / heads});  // (B, T, H, hs)
  return Permute(split, {0, 2, 1, 3});                   // (B, H, T, hs)
}

Var MergeHeads(const Var& x) {
  const int64_t b = x.dim(0), h = x.dim(1), t = x.dim(2), hs = x.dim(3);
  Var merged = Permute(x, {0, 2, 1, 3});  // (B, T, H, hs)
  return Reshape(merged, {b, t, h * hs});  // (B, T, H*hs)
}

Tensor CausalMaskBias(int64_t t, int64_t s, int64_t offset) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor mask = Tensor::Zeros({1, 1, t, s});
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = offset + i + 1; j < s; ++j) mask.data()[i * s + j] = -inf;
  return mask;
}

Tensor KeyPaddingMaskBias(const std::vector<int64_t>& key_lengths, int64_t t, int64_t s,
                          const Tensor& base) {
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t b = static_cast<int64_t>(key_lengths.size());
  Tensor mask = Tensor::Zeros({b, 1, t, s});
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j) {
        float v = j >= key_lengths[n] ? -inf : 0.0f;
        if (base.defined()) v += base.data()[(base.dim(0) == 1 ? 0 : n) * t * s + i * s + j];
        mask.data()[(n * t + i) * s + j] = v;
      }
  return mask;
}

Var KeyState(const AttentionInput& in, const std::string& name, int token_dim,
             const std::function<Var()>& compute) {
  if (in.cache == nullptr) return compute();
  if (in.memory.defined()) return in.cache->Source(name, token_dim, compute);
  TVLAB_CHECK_EQ(in.position_offset, in.cache->Length(name))
      << "self-attention with a KV cache: position_offset must equal the tokens cached ";
  return in.cache->Append(name, compute(), token_dim);
}

Var Attend(const Var& q, const Var& k, const Var& v, const AttentionInput& in,
           const Module& owner, float dropout) {
  TVLAB_CHECK(in.score != nullptr) << "attention needs a score plugin";
  Var logits = in.score->Logits(q, k);  // (B, H, T, S)
  const int64_t t = logits.dim(2), s = logits.dim(3);
  // Positions relate a sequence to itself: as rotary positions, a logit bias
  // (ALiBi, T5) applies to self-attention only, never to cross-attention,
  // whose keys are another sequence's positions.
  if (in.position != nullptr && !in.memory.defined()) {
    Var bias = in.position->LogitBias(q.dim(1), in.position_offset, t, s);
    if (bias.defined()) logits = Add(logits, bias);
  }
  if (in.mask_bias.defined()) logits = Add(logits, Var(in.mask_bias));  // -inf hides keys
  Var weights = Softmax(logits);  // (B, H, T, S), rows sum to 1 over visible keys
  if (in.probe != nullptr && *in.probe) (*in.probe)(owner.path(), weights.value());
  if (in.ctx.training && dropout > 0.0f) {
    weights = Dropout(weights, dropout, owner.DropoutStream(in.ctx, "attention_weights"));
  }
  return MatMul(weights, v);  // (B, H, T, S) x (B, H, S, hs) -> (B, H, T, hs)
}

}  // namespace tvlab
