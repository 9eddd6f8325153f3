// Gated DeltaNet (Yang, Kautz & Hatamizadeh 2025, "Gated Delta Networks:
// Improving Mamba2 with Delta Rule", §3 and the fla implementation's
// layer): the delta rule with a data-dependent scalar decay per head (the
// Mamba-2 gate), a (hs, hs) state per head (framework/attention/delta_rule.h):
//
//   q = l2(silu(x W_q)) * hs^-1/2,  k = l2(silu(x W_k)),  v = x W_v   (H heads of hs)
//   beta_t = sigmoid(x_t W_beta)                                       (per head)
//   g_t = -exp(A_log) * softplus(x_t W_a + dt_bias) <= 0,  alpha_t = exp(g_t)  (per head)
//   S_t = alpha_t (I - beta_t k_t^T k_t) S_{t-1} + beta_t k_t^T v_t,   o_t = q_t S_t
//   out = concat_h(RMSNorm(o_h) * swish(x W_g)_h) W_o
//
// S is (key, value): the paper's S_t = alpha_t S_{t-1}(I - beta k k^T) +
// beta v k^T with o_t = S_t q_t, transposed. The gate stays in log space
// (softplus(z) = -logsigmoid(-z), every exp of a non-positive number).
// A_log and dt_bias (H each) start as fla's draws, spread over the heads
// instead of random: A_h = 16 (h + 1/2) / H in (0, 16), dt_h log-spaced in
// [1e-3, 1e-1], dt_bias = softplus^-1(dt). The RMSNorm (eps 1e-5) has one
// learned scale of hs shared by the heads, then the swish output gate (the
// paper's output block). Not here: the short causal convolution (kernel 4)
// before the SiLU of q, k and v (it would add the last 3 inputs to the
// decoding state); v takes no SiLU without it. A recurrent mixer
// (kRecurrentMixer): decoding keeps the state (H, hs, hs) per row.
//
// Example config (configs/lm_text_gated_deltanet.pbtxt):
//   attention { layout: "gated_deltanet" }

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/attention/delta_rule.h"
#include "framework/attention/gated_linear.h"
#include "framework/attention/heads.h"
#include "framework/attention/mixer_cost.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/capabilities.h"
#include "framework/nn/layers.h"
#include "plugins/attention/gated_deltanet/gated_deltanet.pb.h"

namespace tvlab {
namespace {

constexpr float kHeadNormEps = 1e-5f;  // fla's FusedRMSNormGated

class GatedDeltanet : public AttentionLayout {
 public:
  static constexpr uint32_t kCapabilities = kRecurrentMixer | kNeverFusesLayout;

  static absl::Status Validate(const GatedDeltanetOptions& o, const ModelDims&) {
    if (o.chunk_size() <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "chunk_size must be > 0 (got ", o.chunk_size(), "); tokens per chunk of the training form, e.g. 16"));
    return absl::OkStatus();
  }
  static std::unique_ptr<AttentionLayout> Create(const GatedDeltanetOptions& o, const ModelDims& dims) {
    return std::make_unique<GatedDeltanet>(o, dims);
  }

  GatedDeltanet(const GatedDeltanetOptions& o, const ModelDims& dims) : options_(o), dims_(dims) {
    const int64_t c = dims.d_model, h = dims.num_heads;
    w_q_ = AddChild("w_q", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_k_ = AddChild("w_k", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_v_ = AddChild("w_v", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_beta_ = AddChild("w_beta", std::make_unique<nn::Linear>(c, h, false));
    w_a_ = AddChild("w_a", std::make_unique<nn::Linear>(c, h, false));
    w_g_ = AddChild("w_g", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(c, c, dims.bias));
    a_log_ = AddParameter("a_log", {h}, Init::Zeros());      // set in AfterInitialize
    dt_bias_ = AddParameter("dt_bias", {h}, Init::Zeros());  // set in AfterInitialize
    head_norm_scale_ = AddParameter("head_norm_scale", {dims.head_dim}, Init::Ones());
  }

  // fla's A ~ U(0, 16) and dt ~ logU(1e-3, 1e-1), spread evenly over the heads.
  void AfterInitialize() override {
    const int64_t h = dims_.num_heads;
    std::vector<float> a_log(h), dt_bias(h);
    for (int64_t i = 0; i < h; ++i) {
      const double frac = (static_cast<double>(i) + 0.5) / static_cast<double>(h);
      const double dt = std::exp(std::log(1e-3) + frac * (std::log(1e-1) - std::log(1e-3)));
      a_log[i] = static_cast<float>(std::log(16.0 * frac));
      dt_bias[i] = static_cast<float>(dt + std::log(-std::expm1(-dt)));  // softplus(dt_bias) = dt
    }
    a_log_.mutable_value() = Tensor::FromVector({h}, a_log, a_log_.value().device());
    dt_bias_.mutable_value() = Tensor::FromVector({h}, dt_bias, dt_bias_.value().device());
  }

  Var Forward(const AttentionInput& in) const override {
    const int64_t h = dims_.num_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(dims_.head_dim));
    Var q = Scale(L2NormalizeLastDim(Silu(SplitHeads(w_q_->Forward(in.x), h))), scale);  // (B, H, T, hs)
    Var k = L2NormalizeLastDim(Silu(SplitHeads(w_k_->Forward(in.x), h)));               // (B, H, T, hs)
    Var v = SplitHeads(w_v_->Forward(in.x), h);                                          // (B, H, T, hs)
    Var beta = Sigmoid(SplitHeads(w_beta_->Forward(in.x), h));                           // (B, H, T, 1)
    Var z = Add(w_a_->Forward(in.x), dt_bias_);                                          // (B, T, H)
    Var log_gate = Mul(SplitHeads(LogSigmoid(Scale(z, -1.0f)), h),                       // -softplus(z)
                       Reshape(Exp(a_log_), {1, h, 1, 1}));                              // (B, H, T, 1) <= 0
    Var o = MixDeltaRule(in, q, k, v, beta, log_gate, options_.chunk_size());            // (B, H, T, hs)
    o = Normalize(o, head_norm_scale_, Var(), kHeadNormEps, /*subtract_mean=*/false);
    Var gate = Silu(SplitHeads(w_g_->Forward(in.x), h));                                 // (B, H, T, hs)
    return w_o_->Forward(MergeHeads(Mul(o, gate)));                                      // (B, T, C)
  }

  // A fixed state, not a per-token cache.
  int64_t KvCacheBytesPerToken(int64_t) const override { return 0; }
  int64_t RecurrentStateBytes(int64_t bytes_per_element) const override {
    return dims_.num_heads * dims_.head_dim * dims_.head_dim * bytes_per_element;
  }
  // Training's chunked form at options.chunk_size (mixer_cost.h).
  std::optional<double> MixingFlopsPerToken(int64_t seq_len) const override {
    return DeltaRuleChunkedFlopsPerToken(
        MixerShape{dims_.num_heads, dims_.head_dim, dims_.head_dim, options_.chunk_size()}, seq_len);
  }

 private:
  GatedDeltanetOptions options_;
  ModelDims dims_;
  nn::Linear *w_q_, *w_k_, *w_v_, *w_beta_, *w_a_, *w_g_, *w_o_;
  Var a_log_;            // (H): log A
  Var dt_bias_;          // (H)
  Var head_norm_scale_;  // (hs)
};

TVLAB_REGISTER_ATTENTION_LAYOUT("gated_deltanet", GatedDeltanet, GatedDeltanetOptions);

}  // namespace
}  // namespace tvlab
