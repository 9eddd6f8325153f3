// Gated linear attention (Yang et al. 2024, "Gated Linear Attention
// Transformers with Hardware-Efficient Training", §4 and the fla
// implementation's defaults): linear attention with a data-dependent forget
// gate per key dimension, a (hs, hs) state per head:
//
//   q = x W_q * hs^-1/2, k = x W_k, v = x W_v              (H heads of hs)
//   log a_t = logsigmoid(x_t W_1 W_2 + b_2) / normalizer   (H * hs, <= 0)
//   S_t = diag(a_t) S_{t-1} + k_t^T v_t,   o_t = q_t S_t
//   out = concat_h(RMSNorm(o_h) * swish(x W_g)_h) W_o
//
// W_1 (C -> r, no bias) and W_2 (r -> H * hs, bias) are the low-rank gate
// (options.gate_low_rank r = 16, normalizer 16). The RMSNorm (eps 1e-5)
// normalises each head's hs outputs with one learned scale shared by the
// heads (fla's FusedRMSNormGated). The gates stay in log space: the
// chunked form takes cumulative sums of log a_t inside each chunk and only
// exponentiates non-positive differences (framework/attention/gated_linear.h).
// A recurrent mixer (kRecurrentMixer): decoding keeps the state
// (H, hs, hs) per row, not a KV cache. Key dimension expansion (fla's
// expand_k = 0.5) is not an option here: keys have hs dimensions.
//
// Example config (configs/lm_text_gla.pbtxt):
//   attention { layout: "gla" }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/attention/gated_linear.h"
#include "framework/attention/heads.h"
#include "framework/attention/mixer_cost.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/capabilities.h"
#include "framework/nn/layers.h"
#include "plugins/attention/gla/gla.pb.h"

namespace tvlab {
namespace {

constexpr float kHeadNormEps = 1e-5f;  // fla's FusedRMSNormGated

class Gla : public AttentionLayout {
 public:
  static constexpr uint32_t kCapabilities = kRecurrentMixer | kNeverFusesLayout;

  static absl::Status Validate(const GlaOptions& o, const ModelDims&) {
    if (o.chunk_size() <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "chunk_size must be > 0 (got ", o.chunk_size(), "); tokens per chunk of the training form, e.g. 64"));
    if (o.gate_low_rank() <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "gate_low_rank must be > 0 (got ", o.gate_low_rank(), "); the paper's 16"));
    if (!(o.gate_logit_normalizer() > 0.0f))
      return absl::InvalidArgumentError(absl::StrCat(
          "gate_logit_normalizer must be > 0 (got ", o.gate_logit_normalizer(), "); the paper's 16"));
    return absl::OkStatus();
  }
  static std::unique_ptr<AttentionLayout> Create(const GlaOptions& o, const ModelDims& dims) {
    return std::make_unique<Gla>(o, dims);
  }

  Gla(const GlaOptions& o, const ModelDims& dims) : options_(o), dims_(dims) {
    const int64_t c = dims.d_model;
    w_q_ = AddChild("w_q", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_k_ = AddChild("w_k", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_v_ = AddChild("w_v", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_g_ = AddChild("w_g", std::make_unique<nn::Linear>(c, c, dims.bias));
    gate_1_ = AddChild("gate_1", std::make_unique<nn::Linear>(c, o.gate_low_rank(), false));
    gate_2_ = AddChild("gate_2", std::make_unique<nn::Linear>(o.gate_low_rank(), c, true));
    w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(c, c, dims.bias));
    head_norm_scale_ = AddParameter("head_norm_scale", {dims.head_dim}, Init::Ones());
  }

  Var Forward(const AttentionInput& in) const override {
    const int64_t h = dims_.num_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(dims_.head_dim));
    Var q = Scale(SplitHeads(w_q_->Forward(in.x), h), scale);  // (B, H, T, hs)
    Var k = SplitHeads(w_k_->Forward(in.x), h);                // (B, H, T, hs)
    Var v = SplitHeads(w_v_->Forward(in.x), h);                // (B, H, T, hs)
    Var gate_logits = gate_2_->Forward(gate_1_->Forward(in.x));  // (B, T, C)
    Var log_gate = Scale(SplitHeads(LogSigmoid(gate_logits), h),
                         1.0f / options_.gate_logit_normalizer());  // (B, H, T, hs) <= 0
    Var o = MixGatedLinear(in, q, k, v, log_gate, options_.chunk_size());  // (B, H, T, hs)
    o = Normalize(o, head_norm_scale_, Var(), kHeadNormEps, /*subtract_mean=*/false);
    Var gate = Silu(SplitHeads(w_g_->Forward(in.x), h));                   // (B, H, T, hs)
    return w_o_->Forward(MergeHeads(Mul(o, gate)));                        // (B, T, C)
  }

  // A fixed state, not a per-token cache.
  int64_t KvCacheBytesPerToken(int64_t) const override { return 0; }
  int64_t RecurrentStateBytes(int64_t bytes_per_element) const override {
    return dims_.num_heads * dims_.head_dim * dims_.head_dim * bytes_per_element;
  }
  // Training's chunked form at options.chunk_size (mixer_cost.h).
  std::optional<double> MixingFlopsPerToken(int64_t seq_len) const override {
    return GatedLinearChunkedFlopsPerToken(
        MixerShape{dims_.num_heads, dims_.head_dim, dims_.head_dim, options_.chunk_size()}, seq_len);
  }

 private:
  GlaOptions options_;
  ModelDims dims_;
  nn::Linear *w_q_, *w_k_, *w_v_, *w_g_, *gate_1_, *gate_2_, *w_o_;
  Var head_norm_scale_;  // (hs)
};

TVLAB_REGISTER_ATTENTION_LAYOUT("gla", Gla, GlaOptions);

}  // namespace
}  // namespace tvlab
