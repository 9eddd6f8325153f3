// Multi-scale retention (Sun et al. 2023, "Retentive Network", §2.1-2.2,
// eq. 5-8): linear attention with a fixed decay per head, the gated linear
// kernel with a constant gate, a (hs, hs) state per head:
//
//   q = x W_Q, k = x W_K * hs^-1/2, v = x W_V              (H heads of hs)
//   gamma_h = 1 - 2^(-5-h)   for head h = 0 .. H-1
//   S_t = gamma_h S_{t-1} + k_t^T v_t,   o_t = q_t S_t
//   Y = GroupNorm_h(o),   out = (swish(x W_G) * Y) W_O
//
// The GroupNorm normalises each head's hs outputs (mean and variance, eps
// 1e-6, no affine, as torchscale's LayerNorm(head_dim,
// elementwise_affine=False)). Not here: the paper's xPos rotation of q and
// k (a relative position inside attention; a mixer takes positions only on
// the embeddings) and its value dimension 2 * hs (values have hs here).
// The decay is log gamma_h in log space, one per head
// (framework/attention/gated_linear.h). A recurrent mixer
// (kRecurrentMixer): decoding keeps the state (H, hs, hs) per row.
//
// Example config (configs/lm_text_retnet.pbtxt):
//   attention { layout: "retnet" }

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/attention/gated_linear.h"
#include "framework/attention/heads.h"
#include "framework/attention/mixer_cost.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/capabilities.h"
#include "framework/nn/layers.h"
#include "plugins/attention/retnet/retnet.pb.h"

namespace tvlab {
namespace {

constexpr float kGroupNormEps = 1e-6f;  // torchscale's layernorm_eps

class Retnet : public AttentionLayout {
 public:
  static constexpr uint32_t kCapabilities = kRecurrentMixer | kNeverFusesLayout;

  static absl::Status Validate(const RetnetOptions& o, const ModelDims&) {
    if (o.chunk_size() <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "chunk_size must be > 0 (got ", o.chunk_size(), "); tokens per chunk of the training form, e.g. 64"));
    return absl::OkStatus();
  }
  static std::unique_ptr<AttentionLayout> Create(const RetnetOptions& o, const ModelDims& dims) {
    return std::make_unique<Retnet>(o, dims);
  }

  Retnet(const RetnetOptions& o, const ModelDims& dims) : options_(o), dims_(dims) {
    const int64_t c = dims.d_model;
    w_q_ = AddChild("w_q", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_k_ = AddChild("w_k", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_v_ = AddChild("w_v", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_g_ = AddChild("w_g", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(c, c, dims.bias));
    for (int64_t h = 0; h < dims.num_heads; ++h)
      log_decay_.push_back(static_cast<float>(std::log1p(-std::exp2(-5.0 - static_cast<double>(h)))));
  }

  Var Forward(const AttentionInput& in) const override {
    const int64_t h = dims_.num_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(dims_.head_dim));
    Var q = SplitHeads(w_q_->Forward(in.x), h);                // (B, H, T, hs)
    Var k = Scale(SplitHeads(w_k_->Forward(in.x), h), scale);  // (B, H, T, hs)
    Var v = SplitHeads(w_v_->Forward(in.x), h);                // (B, H, T, hs)
    const int64_t b = q.dim(0), t = q.dim(2);
    Var per_head(Tensor::FromVector({1, h, 1, 1}, log_decay_));             // (1, H, 1, 1): log gamma_h
    Var log_gate = Mul(Var(Tensor::Full({b, h, t, 1}, 1.0f)), per_head);    // (B, H, T, 1)
    Var o = MixGatedLinear(in, q, k, v, log_gate, options_.chunk_size());  // (B, H, T, hs)
    o = Normalize(o, Var(), Var(), kGroupNormEps, /*subtract_mean=*/true);
    Var gate = Silu(SplitHeads(w_g_->Forward(in.x), h));                   // (B, H, T, hs)
    return w_o_->Forward(MergeHeads(Mul(gate, o)));                        // (B, T, C)
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
  RetnetOptions options_;
  ModelDims dims_;
  nn::Linear *w_q_, *w_k_, *w_v_, *w_g_, *w_o_;
  std::vector<float> log_decay_;  // (H): log gamma_h
};

TVLAB_REGISTER_ATTENTION_LAYOUT("retnet", Retnet, RetnetOptions);

}  // namespace
}  // namespace tvlab
