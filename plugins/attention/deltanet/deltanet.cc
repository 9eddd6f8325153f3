// DeltaNet (Yang, Wang, Zhang, Shen & Kim 2024, "Parallelizing Linear
// Transformers with the Delta Rule over Sequence Length", §3 and the fla
// implementation's layer): linear attention whose state is written by the
// delta rule, a (hs, hs) state per head (framework/attention/delta_rule.h):
//
//   q = l2(silu(x W_q)) * hs^-1/2,  k = l2(silu(x W_k)),  v = x W_v   (H heads of hs)
//   beta_t = sigmoid(x_t W_beta)                         (one per head)
//   S_t = (I - beta_t k_t^T k_t) S_{t-1} + beta_t k_t^T v_t,   o_t = q_t S_t
//   out = concat_h(RMSNorm(o_h) * swish(x W_g)_h) W_o
//
// S is (key, value): the paper's S_t = S_{t-1}(I - beta k k^T) + beta v k^T
// with o_t = S_t q_t, transposed. l2 normalises each head's keys and
// queries (x / sqrt(|x|^2 + 1e-6)), so I - beta k^T k is a contraction.
// The RMSNorm (eps 1e-5) has one learned scale of hs shared by the heads;
// the swish output gate is fla's use_gate (kept here as in Gated DeltaNet,
// so the two mixers differ only by the decay). Not here: the paper's short
// causal convolution (kernel 4) before the SiLU of q, k and v (it would add
// the last 3 inputs to the decoding state); v takes no SiLU without it.
// Trained by the chunked (WY) form; a recurrent mixer (kRecurrentMixer):
// decoding keeps the state (H, hs, hs) per row, not a KV cache.
//
// Example config (configs/lm_text_deltanet.pbtxt):
//   attention { layout: "deltanet" }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/attention/delta_rule.h"
#include "framework/attention/heads.h"
#include "framework/attention/mixer_cost.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/capabilities.h"
#include "framework/nn/layers.h"
#include "plugins/attention/deltanet/deltanet.pb.h"

namespace tvlab {
namespace {

constexpr float kHeadNormEps = 1e-5f;  // fla's FusedRMSNormGated

class Deltanet : public AttentionLayout {
 public:
  static constexpr uint32_t kCapabilities = kRecurrentMixer | kNeverFusesLayout;

  static absl::Status Validate(const DeltanetOptions& o, const ModelDims&) {
    if (o.chunk_size() <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "chunk_size must be > 0 (got ", o.chunk_size(), "); tokens per chunk of the training form, e.g. 16"));
    return absl::OkStatus();
  }
  static std::unique_ptr<AttentionLayout> Create(const DeltanetOptions& o, const ModelDims& dims) {
    return std::make_unique<Deltanet>(o, dims);
  }

  Deltanet(const DeltanetOptions& o, const ModelDims& dims) : options_(o), dims_(dims) {
    const int64_t c = dims.d_model;
    w_q_ = AddChild("w_q", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_k_ = AddChild("w_k", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_v_ = AddChild("w_v", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_beta_ = AddChild("w_beta", std::make_unique<nn::Linear>(c, dims.num_heads, false));
    w_g_ = AddChild("w_g", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(c, c, dims.bias));
    head_norm_scale_ = AddParameter("head_norm_scale", {dims.head_dim}, Init::Ones());
  }

  Var Forward(const AttentionInput& in) const override {
    const int64_t h = dims_.num_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(dims_.head_dim));
    Var q = Scale(L2NormalizeLastDim(Silu(SplitHeads(w_q_->Forward(in.x), h))), scale);  // (B, H, T, hs)
    Var k = L2NormalizeLastDim(Silu(SplitHeads(w_k_->Forward(in.x), h)));               // (B, H, T, hs)
    Var v = SplitHeads(w_v_->Forward(in.x), h);                                          // (B, H, T, hs)
    Var beta = Sigmoid(SplitHeads(w_beta_->Forward(in.x), h));                           // (B, H, T, 1)
    Var o = MixDeltaRule(in, q, k, v, beta, Var(), options_.chunk_size());               // (B, H, T, hs)
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
  DeltanetOptions options_;
  ModelDims dims_;
  nn::Linear *w_q_, *w_k_, *w_v_, *w_beta_, *w_g_, *w_o_;
  Var head_norm_scale_;  // (hs)
};

TVLAB_REGISTER_ATTENTION_LAYOUT("deltanet", Deltanet, DeltanetOptions);

}  // namespace
}  // namespace tvlab
