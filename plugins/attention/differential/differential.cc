// Differential attention (Ye et al. 2024, "Differential Transformer", §2.1):
// each head computes two softmax maps from two halves of its queries and
// keys and subtracts the second, weighted by a learned lambda, so that
// attention noise common to both maps cancels.
//
// With D = H / 2 differential heads (the paper halves the head count so the
// parameters match a Transformer of H heads), G' key/value heads (G' = D for
// MHA; query head i reads key/value head i / (D / G')), hs = d_model / H, and
// m = x (self-attention) or memory (cross-attention):
//   [q1; q2] = x W_q      query heads 2i and 2i + 1 are q1, q2 of head i (hs each)
//   [k1; k2] = m W_k      key heads 2g and 2g + 1 are k1, k2 of head g (hs each)
//   v = m W_v             one value of 2 hs per key/value head
//   lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init   (lq*, lk*: hs each)
//   head_i = softmax(score(q1, k1)) v - lambda * softmax(score(q2, k2)) v
//   out = concat_i((1 - lambda_init) * RMSNorm(head_i)) W_o
// The RMSNorm (eps 1e-5) normalises each head's 2 hs outputs with one
// learned scale shared by the heads (the paper's GroupNorm over heads).
// lambda_init: 0.8 - 0.6 exp(-0.3 (l - 1)) for layer l in the paper;
// options.lambda_init_rule (a constant by default; no layer index reaches a
// plugin, so the schedule takes the depth as an option).
//
// (A1 - lambda A2) v = A1 v - lambda A2 v, so the two maps are two ordinary
// Attend calls (framework/attention/attend.h) and each runs the fused kernel
// where the score, position and backend allow; every score, position and
// mask the other layouts take works unchanged. Dropout on the weights draws
// the same mask for both maps (one owner, one site), which is the paper's
// dropout of the difference map. Rotation and the KV cache are done here
// (as mla does), since both maps share one cache: "k" holds both key halves,
// "v" the values; so is the options' QK-norm, before the rotation. A probe
// receives the two maps as "<layer>.softmax1" and "<layer>.softmax2".
//
// KV cache per token per layer: 2 * G' * hs (keys) + 2 * G' * hs (values),
// i.e. 2 * H * hs for G' = D, as mha.
//
// Example config (configs/sort_digits_differential.pbtxt):
//   attention { layout: "differential" }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/attention/attend.h"
#include "framework/attention/heads.h"
#include "framework/attention/key_state.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/capabilities.h"
#include "framework/nn/layers.h"
#include "plugins/attention/differential/differential.pb.h"

namespace tvlab {
namespace {

constexpr float kHeadNormEps = 1e-5f;  // the paper's code: RMSNorm(2 hs, eps = 1e-5)

int64_t DiffHeads(const ModelDims& dims) { return dims.num_heads / 2; }  // D

int64_t KvHeads(const DifferentialOptions& o, const ModelDims& dims) {  // G'
  return o.num_kv_heads() > 0 ? o.num_kv_heads() : DiffHeads(dims);
}

double LambdaInit(const DifferentialOptions& o) {
  if (o.lambda_init_rule() == DifferentialOptions::DEPTH_SCHEDULE)
    return 0.8 - 0.6 * std::exp(-0.3 * (o.depth() - 1));
  return o.lambda_init();
}

absl::Status ValidateHeads(const DifferentialOptions& o, const ModelDims& dims) {
  if (dims.num_heads % 2 != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "model.num_heads must be even for differential attention (got ", dims.num_heads,
        "): each of its num_heads / 2 heads uses two query and key heads; e.g. ",
        dims.num_heads + 1));
  const int64_t d = DiffHeads(dims);
  std::vector<int64_t> divisors;
  for (int64_t g = 1; g <= d; ++g)
    if (d % g == 0) divisors.push_back(g);
  const std::string fix = absl::StrCat("set num_kv_heads to 0 or a divisor of model.num_heads / 2 (",
                                       d, "): ", absl::StrJoin(divisors, ", "));
  if (o.num_kv_heads() < 0 || (o.num_kv_heads() > 0 && d % o.num_kv_heads() != 0))
    return absl::InvalidArgumentError(
        absl::StrCat("num_kv_heads ", o.num_kv_heads(), " is not allowed; ", fix));
  return absl::OkStatus();
}

// x (B, 2N, L, hs), heads 2n and 2n + 1 a pair -> both members (B, N, L, hs).
std::pair<Var, Var> Halves(const Var& x) {
  const int64_t b = x.dim(0), n = x.dim(1) / 2, l = x.dim(2), hs = x.dim(3);
  Var pairs = Reshape(x, {b, n, 2 * l, hs});  // (B, N, 2L, hs): a view
  return {Slice(pairs, 2, 0, l), Slice(pairs, 2, l, l)};
}

class Differential : public AttentionLayout {
 public:
  static constexpr uint32_t kCapabilities =
      kAppliesRotaryPositions | kAppliesLogitBias | kAttendsWithFewerHeads;

  static absl::Status Validate(const DifferentialOptions& o, const ModelDims& dims) {
    if (absl::Status s = ValidateHeads(o, dims); !s.ok()) return s;
    if (o.lambda_init_rule() == DifferentialOptions::DEPTH_SCHEDULE && o.depth() < 1)
      return absl::InvalidArgumentError(absl::StrCat(
          "depth must be >= 1 with lambda_init_rule DEPTH_SCHEDULE (got ", o.depth(),
          "): the 1-based index of the layer, e.g. 1 for the first"));
    if (o.lambda_init_rule() == DifferentialOptions::CONSTANT &&
        !(o.lambda_init() >= 0.0f && o.lambda_init() < 1.0f))
      return absl::InvalidArgumentError(absl::StrCat(
          "lambda_init must be in [0, 1) (got ", o.lambda_init(),
          "): the heads are scaled by 1 - lambda_init; the paper uses 0.2 to 0.8, e.g. 0.8"));
    return absl::OkStatus();
  }

  // The resolved spec records the key/value heads and lambda_init used.
  static void Resolve(DifferentialOptions* o, ModelDims* dims) {
    o->set_num_kv_heads(static_cast<int32_t>(KvHeads(*o, *dims)));
    o->set_lambda_init(static_cast<float>(LambdaInit(*o)));
  }

  static std::unique_ptr<AttentionLayout> Create(const DifferentialOptions& o,
                                                 const ModelDims& dims) {
    return std::make_unique<Differential>(dims, KvHeads(o, dims), LambdaInit(o));
  }

  Differential(const ModelDims& dims, int64_t kv_heads, double lambda_init)
      : dims_(dims), kv_heads_(kv_heads), lambda_init_(static_cast<float>(lambda_init)) {
    const int64_t c = dims.d_model, hs = dims.head_dim, kv_width = 2 * kv_heads * hs;
    w_q_ = AddChild("w_q", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_k_ = AddChild("w_k", std::make_unique<nn::Linear>(c, kv_width, dims.bias));
    w_v_ = AddChild("w_v", std::make_unique<nn::Linear>(c, kv_width, dims.bias));
    w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(c, c, dims.bias));
    // The paper initialises the lambda vectors from N(0, 0.1^2).
    lambda_q1_ = AddParameter("lambda_q1", {hs}, Init::Normal(0.1f));
    lambda_k1_ = AddParameter("lambda_k1", {hs}, Init::Normal(0.1f));
    lambda_q2_ = AddParameter("lambda_q2", {hs}, Init::Normal(0.1f));
    lambda_k2_ = AddParameter("lambda_k2", {hs}, Init::Normal(0.1f));
    head_norm_scale_ = AddParameter("head_norm_scale", {2 * hs}, Init::Ones());
  }

  Var Forward(const AttentionInput& in) const override {
    const Var& source = in.memory.defined() ? in.memory : in.x;  // (B, S_new, C)
    const PositionEncoding* rotation = SelfAttentionPosition(in);  // nullptr for cross-attention
    const AttentionExtras* extras = in.extras;  // QK-norm before RoPE, as Attend does
    Var q = SplitHeads(w_q_->Forward(in.x), dims_.num_heads);     // (B, 2D, T, hs)
    if (extras) q = extras->NormalizeQuery(q);
    if (rotation) q = rotation->RotateQuery(q, in.position_offset);
    Var k = KeyState(in, "k", /*token_dim=*/2, [&] {
      Var fresh = SplitHeads(w_k_->Forward(source), 2 * kv_heads_);  // (B, 2G', S_new, hs)
      if (extras) fresh = extras->NormalizeKey(fresh);
      return rotation ? rotation->RotateKey(fresh, in.position_offset) : fresh;
    });  // (B, 2G', S, hs) over every key
    Var v = KeyState(in, "v", /*token_dim=*/2, [&] {
      return SplitHeads(w_v_->Forward(source), kv_heads_);  // (B, G', S_new, 2hs)
    });  // (B, G', S, 2hs)
    auto [q1, q2] = Halves(q);  // (B, D, T, hs) each
    auto [k1, k2] = Halves(k);  // (B, G', S, hs) each
    AttentionContext context = ContextFor(in, *this, dims_.dropout);
    context.rotation = nullptr;  // rotated above
    context.cache = nullptr;     // cached above
    context.qk_normalized = true;  // normalised above
    AttentionProbe first, second;
    if (in.probe != nullptr && *in.probe) {
      first = [&](const std::string& layer, const Tensor& w) { (*in.probe)(layer + ".softmax1", w); };
      second = [&](const std::string& layer, const Tensor& w) { (*in.probe)(layer + ".softmax2", w); };
    }
    context.probe = in.probe != nullptr ? &first : nullptr;
    Var a1v = Attend(q1, k1, v, context);  // (B, D, T, 2hs)
    context.probe = in.probe != nullptr ? &second : nullptr;
    Var a2v = Attend(q2, k2, v, context);             // (B, D, T, 2hs)
    Var heads = Sub(a1v, Mul(a2v, Lambda()));         // (B, D, T, 2hs)
    heads = Normalize(heads, head_norm_scale_, Var(), kHeadNormEps, /*subtract_mean=*/false);
    heads = Scale(heads, 1.0f - lambda_init_);        // (B, D, T, 2hs)
    return w_o_->Forward(MergeHeads(heads));          // (B, T, C)
  }

  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const override {
    return 4 * kv_heads_ * dims_.head_dim * bytes_per_element;  // k1, k2 (hs each), v (2 hs)
  }

 private:
  // exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init -> a scalar.
  Var Lambda() const {
    Var first = Exp(Sum(Mul(lambda_q1_, lambda_k1_)));
    Var second = Exp(Sum(Mul(lambda_q2_, lambda_k2_)));
    return AddScalar(Sub(first, second), lambda_init_);
  }

  ModelDims dims_;
  int64_t kv_heads_;  // G'
  float lambda_init_;
  nn::Linear *w_q_, *w_k_, *w_v_, *w_o_;
  Var lambda_q1_, lambda_k1_, lambda_q2_, lambda_k2_;  // (hs) each
  Var head_norm_scale_;                                // (2 hs)
};

TVLAB_REGISTER_ATTENTION_LAYOUT("differential", Differential, DifferentialOptions);

}  // namespace
}  // namespace tvlab
