// Mamba-2's SSD layer (Dao and Gu 2024, "Transformers are SSMs:
// Generalized Models and Efficient Algorithms Through Structured State
// Space Duality", §7 and the reference mamba_ssm Mamba2 module with its
// defaults): a selective state space model with a scalar decay per head,
// which is the gated linear kernel (framework/attention/gated_linear.h)
// with q = C, k = B, v = dt * x and one log-gate dt * A <= 0 per head:
//
//   [z, xBC, dt_raw] = x W_in        (widths d_in, d_in + 2 G N, H)
//   xBC = SiLU(causal depthwise conv_{d_conv}(xBC) + conv_bias)
//   [x, B, C] = xBC                  (x: H heads of P; B, C: G groups of N)
//   dt = softplus(dt_raw + dt_bias),   A_h = -exp(A_log_h)
//   S_t = exp(dt_t A_h) S_{t-1} + dt_t B_t^T x_t     (per head h, S: (N, P))
//   y_t = C_t S_t + D_h x_t
//   out = (RMSNorm_G(y * SiLU(z)) * norm_weight) W_o
//
// d_in = expand * d_model, P = headdim, H = d_in / P heads, G = ngroups
// groups of heads sharing B and C (head h reads group h / (H / G)), N =
// d_state. The gated RMSNorm (eps 1e-5) normalises each group's d_in / G
// channels after the gate (the reference's norm_before_gate = False).
//
// Kept from the reference: the in_proj layout (z, x, B, C, dt), the
// depthwise conv with bias over (x, B, C) followed by SiLU, D per head,
// the gated grouped RMSNorm; the initialisation of dt_bias (inverse
// softplus of dt = exp(U(log dt_min, log dt_max)) floored at
// dt_init_floor) and of A_log (log U(1, 16)), drawn as U(-1, 1) and mapped
// in AfterInitialize (so an init plugin that replaces the draws of rank-1
// parameters changes them: gpt2's zero biases give the middle of both
// ranges and D = 0); D = 1, norm_weight = 1; the conv's weight and bias
// U(+-1/sqrt(d_conv)) as torch's Conv1d. Left out: the fused Triton
// kernels (the chunked form here is the same SSD algorithm composed of
// autograd ops), dt_limit (no clamp of dt), the optional MLP branch
// (d_ssm < d_in), D per channel (D_has_hdim), learnable initial states,
// sequence parallelism. Projections take model.bias (the reference has
// none); the output projection is named w_o like every layout's (DeepNorm's
// init gain scales it).
//
// A recurrent mixer (kRecurrentMixer): decoding keeps two cache entries
// (kv_cache.h, SetState): "state" (H, N, P) and "conv" (d_conv - 1, d_in +
// 2 G N), the conv's last inputs; both fixed in size.
//
// Example config (configs/lm_text_mamba2.pbtxt):
//   attention { layout: "mamba2" }

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/attention/gated_linear.h"
#include "framework/attention/heads.h"
#include "framework/attention/kv_cache.h"
#include "framework/attention/mixer_cost.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/capabilities.h"
#include "framework/nn/layers.h"
#include "plugins/attention/mamba2/mamba2.pb.h"

namespace tvlab {
namespace {

constexpr float kNormEps = 1e-5f;  // the reference's RMSNormGated

// The layer's sizes from its options and the model.
struct Sizes {
  int64_t d_inner, headdim, heads, groups, d_state, d_conv, conv_dim;
};

Sizes SizesOf(const Mamba2Options& o, const ModelDims& dims) {
  Sizes s;
  s.d_inner = static_cast<int64_t>(o.expand()) * dims.d_model;
  s.headdim = o.headdim() > 0 ? o.headdim() : dims.head_dim;
  s.heads = s.headdim > 0 ? s.d_inner / s.headdim : 0;
  s.groups = o.ngroups();
  s.d_state = o.d_state();
  s.d_conv = o.d_conv();
  s.conv_dim = s.d_inner + 2 * s.groups * s.d_state;
  return s;
}

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// clamp(u, -1, 1) mapped linearly onto [lo, hi].
Var OntoRange(const Var& u, float lo, float hi) {
  Var above = AddScalar(Relu(AddScalar(u, 1.0f)), -1.0f);                  // max(u, -1)
  Var clamped = Scale(AddScalar(Relu(AddScalar(Scale(above, -1.0f), 1.0f)), -1.0f), -1.0f);  // min(., 1)
  return AddScalar(Scale(AddScalar(clamped, 1.0f), 0.5f * (hi - lo)), lo);
}

// log(1 + e) for e in [0, 1], accurate to float32's precision of the
// result for small e, where log(1 + e) rounds 1 + e first (relative error
// up to 2^-24 / e: 6e-5 at dt = 0.001). Kahan's trick, u = fl(1 + e):
// log(1 + e) = e * log(u) / (u - 1), with u - 1 exact; where u = 1 (e <
// 2^-24) the ratio is 1 (log(1 + e) = e to float32's precision).
Var Log1p(const Var& e) {
  Var u = AddScalar(e, 1.0f);                                   // fl(1 + e), in [1, 2]
  Var b = AddScalar(u, -1.0f);                                  // u - 1, exact: 0 or >= 2^-23
  const Tensor at_one = Relu(AddScalar(Scale(Var(b.value()), -8388608.0f), 1.0f)).value();  // 1 where u = 1, else 0
  Var ratio = Div(Add(Log(u), Var(at_one)), Add(b, Var(at_one)));  // log(u) / (u - 1), or 1
  return Mul(e, ratio);
}

// softplus(x) = max(x, 0) + log(1 + exp(-|x|)), stable for any x and
// accurate for the small dt (x << 0) Mamba-2 starts at.
Var Softplus(const Var& x) {
  Var magnitude = Add(Relu(x), Relu(Scale(x, -1.0f)));  // |x|
  return Add(Relu(x), Log1p(Exp(Scale(magnitude, -1.0f))));
}

class Mamba2 : public AttentionLayout {
 public:
  static constexpr uint32_t kCapabilities = kRecurrentMixer | kNeverFusesLayout;

  static absl::Status Validate(const Mamba2Options& o, const ModelDims& dims) {
    if (o.d_state() <= 0) return Invalid(absl::StrCat("d_state must be > 0 (got ", o.d_state(), "); e.g. 16"));
    if (o.d_conv() <= 0)
      return Invalid(absl::StrCat("d_conv must be > 0 (got ", o.d_conv(), "); the reference's 4 (1: no conv mixing)"));
    if (o.expand() <= 0) return Invalid(absl::StrCat("expand must be > 0 (got ", o.expand(), "); the reference's 2"));
    if (o.headdim() < 0)
      return Invalid(absl::StrCat("headdim must be >= 0 (got ", o.headdim(), "); 0 = the model's head size"));
    if (o.ngroups() <= 0) return Invalid(absl::StrCat("ngroups must be > 0 (got ", o.ngroups(), "); e.g. 1"));
    if (o.chunk_size() <= 0)
      return Invalid(absl::StrCat("chunk_size must be > 0 (got ", o.chunk_size(),
                                  "); tokens per chunk of the training form, e.g. 64"));
    const Sizes s = SizesOf(o, dims);
    if (s.headdim <= 0 || s.d_inner % s.headdim != 0)
      return Invalid(absl::StrCat("headdim ", s.headdim, (o.headdim() == 0 ? " (the model's head size)" : ""),
                                  " does not divide expand * d_model = ", o.expand(), " * ", dims.d_model, " = ",
                                  s.d_inner, "; choose a headdim that divides ", s.d_inner, " (the SSD heads are ",
                                  "expand * d_model / headdim)"));
    if (s.heads % s.groups != 0)
      return Invalid(absl::StrCat("ngroups ", s.groups, " does not divide the ", s.heads,
                                  " SSD heads (expand * d_model / headdim = ", s.d_inner, " / ", s.headdim,
                                  "); choose ngroups dividing ", s.heads, ", e.g. 1"));
    if (!(o.dt_min() > 0.0f) || !(o.dt_max() >= o.dt_min()))
      return Invalid(absl::StrCat("dt_min and dt_max must satisfy 0 < dt_min <= dt_max (got ", o.dt_min(), ", ",
                                  o.dt_max(), "); the reference's 0.001 and 0.1"));
    if (!(o.dt_init_floor() > 0.0f))
      return Invalid(absl::StrCat("dt_init_floor must be > 0 (got ", o.dt_init_floor(), "); the reference's 1e-4"));
    if (!(o.a_init_min() > 0.0f) || !(o.a_init_max() >= o.a_init_min()))
      return Invalid(absl::StrCat("a_init_min and a_init_max must satisfy 0 < a_init_min <= a_init_max (got ",
                                  o.a_init_min(), ", ", o.a_init_max(), "); the reference's 1 and 16"));
    return absl::OkStatus();
  }
  static std::unique_ptr<AttentionLayout> Create(const Mamba2Options& o, const ModelDims& dims) {
    return std::make_unique<Mamba2>(o, dims);
  }

  Mamba2(const Mamba2Options& o, const ModelDims& dims) : options_(o), s_(SizesOf(o, dims)) {
    const int64_t c = dims.d_model, in_width = 2 * s_.d_inner + 2 * s_.groups * s_.d_state + s_.heads;
    const float conv_bound = 1.0f / std::sqrt(static_cast<float>(s_.d_conv));  // torch's Conv1d, fan_in d_conv
    in_proj_ = AddChild("in_proj", std::make_unique<nn::Linear>(c, in_width, dims.bias));
    conv_weight_ = AddParameter("conv_weight", {s_.conv_dim, s_.d_conv}, Init::Uniform(conv_bound));
    conv_bias_ = AddParameter("conv_bias", {s_.conv_dim}, Init::Uniform(conv_bound));
    dt_bias_ = AddParameter("dt_bias", {s_.heads}, Init::Uniform(1.0f));  // mapped in AfterInitialize
    a_log_ = AddParameter("a_log", {s_.heads}, Init::Uniform(1.0f));      // mapped in AfterInitialize
    d_ = AddParameter("d", {s_.heads}, Init::Ones());
    norm_weight_ = AddParameter("norm_weight", {s_.d_inner}, Init::Ones());
    w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(s_.d_inner, c, dims.bias));
  }

  // The reference's dt_bias and A_log from the U(-1, 1) draws.
  void AfterInitialize() override {
    Var dt = Exp(OntoRange(Var(dt_bias_.value()), std::log(options_.dt_min()), std::log(options_.dt_max())));
    dt = AddScalar(Relu(AddScalar(dt, -options_.dt_init_floor())), options_.dt_init_floor());  // max(dt, floor)
    Var inverse_softplus = Add(dt, Log(AddScalar(Scale(Exp(Scale(dt, -1.0f)), -1.0f), 1.0f)));  // dt + log(1 - e^-dt)
    dt_bias_.mutable_value() = inverse_softplus.value();
    a_log_.mutable_value() = Log(OntoRange(Var(a_log_.value()), options_.a_init_min(), options_.a_init_max())).value();
  }

  Var Forward(const AttentionInput& in) const override {
    const int64_t b = in.x.dim(0), t = in.x.dim(1), h = s_.heads, gn = s_.groups * s_.d_state;
    Var zxbcdt = in_proj_->Forward(in.x);                          // (B, T, 2 d_in + 2 G N + H)
    Var z = Slice(zxbcdt, 2, 0, s_.d_inner);                       // (B, T, d_in)
    Var conv_in = Slice(zxbcdt, 2, s_.d_inner, s_.conv_dim);       // (B, T, d_in + 2 G N)
    Var dt_raw = Slice(zxbcdt, 2, s_.d_inner + s_.conv_dim, h);    // (B, T, H)
    Var conv_state;
    Var xbc = Silu(CausalConv(in, conv_in, &conv_state));          // (B, T, d_in + 2 G N)
    Var x = SplitHeads(Slice(xbc, 2, 0, s_.d_inner), h);           // (B, H, T, P)
    const int64_t per_group = h / s_.groups;
    Var k = RepeatHeads(SplitHeads(Slice(xbc, 2, s_.d_inner, gn), s_.groups), per_group);       // (B, H, T, N)
    Var q = RepeatHeads(SplitHeads(Slice(xbc, 2, s_.d_inner + gn, gn), s_.groups), per_group);  // (B, H, T, N)
    Var dt = Softplus(Add(dt_raw, Reshape(dt_bias_, {1, 1, h})));  // (B, T, H) > 0
    dt = Reshape(Permute(dt, {0, 2, 1}), {b, h, t, 1});            // (B, H, T, 1)
    Var a = Scale(Exp(Reshape(a_log_, {1, h, 1, 1})), -1.0f);       // (1, H, 1, 1) < 0
    Var log_gate = Mul(dt, a);                                      // (B, H, T, 1) <= 0
    Var y = MixGatedLinear(in, q, k, Mul(x, dt), log_gate, options_.chunk_size());  // (B, H, T, P)
    if (in.cache != nullptr && conv_state.defined()) in.cache->SetState("conv", conv_state.value(), t);
    y = Add(y, Mul(x, Reshape(d_, {1, h, 1, 1})));                 // (B, H, T, P): + D_h x
    Var gated = Mul(MergeHeads(y), Silu(z));                        // (B, T, d_in)
    Var grouped = Reshape(gated, {b, t, s_.groups, s_.d_inner / s_.groups});  // (B, T, G, d_in / G)
    Var normed = Reshape(Normalize(grouped, Var(), Var(), kNormEps, /*subtract_mean=*/false),
                         {b, t, s_.d_inner});                       // (B, T, d_in)
    return w_o_->Forward(Mul(normed, Reshape(norm_weight_, {1, 1, s_.d_inner})));  // (B, T, C)
  }

  // A fixed state, not a per-token cache.
  int64_t KvCacheBytesPerToken(int64_t) const override { return 0; }
  int64_t RecurrentStateBytes(int64_t bytes_per_element) const override {
    return (s_.heads * s_.d_state * s_.headdim + (s_.d_conv - 1) * s_.conv_dim) * bytes_per_element;
  }
  // Training's chunked form at options.chunk_size (mixer_cost.h).
  std::optional<double> MixingFlopsPerToken(int64_t seq_len) const override {
    return GatedLinearChunkedFlopsPerToken(
        MixerShape{s_.heads, s_.d_state, s_.headdim, options_.chunk_size()}, seq_len);
  }

 private:
  // The causal depthwise conv over u (B, T, D): out_t = bias + sum_j
  // w[:, j] * u_{t - (K - 1) + j}, inputs before the sequence being the
  // cached last K - 1 inputs (zeros without a cache or at its start).
  // *state gets the last K - 1 inputs (B, K - 1, D) when K > 1.
  Var CausalConv(const AttentionInput& in, const Var& u, Var* state) const {
    const int64_t b = u.dim(0), t = u.dim(1), d = s_.conv_dim, kernel = s_.d_conv;
    Var padded = u;  // (B, K - 1 + T, D)
    if (kernel > 1) {
      const Tensor* stored = in.cache != nullptr ? in.cache->State("conv") : nullptr;
      Var before = stored != nullptr ? Var(*stored) : Var(Tensor::Zeros({b, kernel - 1, d}));  // (B, K - 1, D)
      padded = Concat({before, u}, 1);
      *state = Slice(padded, 1, t, kernel - 1);  // (B, K - 1, D): no gradient is taken through the cache
    }
    Var out = Reshape(conv_bias_, {1, 1, d});  // (1, 1, D)
    for (int64_t j = 0; j < kernel; ++j) {
      Var tap = Reshape(Slice(conv_weight_, 1, j, 1), {1, 1, d});  // (1, 1, D)
      out = Add(out, Mul(Slice(padded, 1, j, t), tap));             // (B, T, D)
    }
    return out;
  }

  Mamba2Options options_;
  Sizes s_;
  nn::Linear *in_proj_, *w_o_;
  Var conv_weight_;  // (d_in + 2 G N, d_conv)
  Var conv_bias_;    // (d_in + 2 G N)
  Var dt_bias_;      // (H)
  Var a_log_;        // (H)
  Var d_;            // (H)
  Var norm_weight_;  // (d_in)
};

TVLAB_REGISTER_ATTENTION_LAYOUT("mamba2", Mamba2, Mamba2Options);

}  // namespace
}  // namespace tvlab
