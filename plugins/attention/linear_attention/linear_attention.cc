// Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs",
// eq. 4-6 and 16-20): the softmax similarity replaced by phi(q) . phi(k), so
// causal attention is a recurrence with a (hs, hs) state per head:
//
//   q = phi(x W_q), k = phi(x W_k), v = x W_v            (H heads of hs)
//   S_t = S_{t-1} + k_t^T v_t,   z_t = z_{t-1} + k_t
//   o_t = q_t S_t / (q_t . z_t + 1e-6)   (normalize; else o_t = q_t S_t)
//   out = concat_h(o) W_o
//
// phi is options.feature_map (elu + 1 in the paper). The numerator and the
// normaliser are one gated linear kernel without gates
// (framework/attention/gated_linear.h) on values extended by a column of
// ones: [v, 1] gives [q S, q . z]. A recurrent mixer (kRecurrentMixer):
// decoding keeps the state (H, hs, hs + 1) per row (hs columns without
// normalize), not a KV cache.
//
// Example config (configs/lm_text_linear_attention.pbtxt):
//   attention {
//     layout: "linear_attention"
//     layout_options {
//       [type.googleapis.com/tvlab.LinearAttentionOptions] { feature_map: ELU_PLUS_ONE }
//     }
//   }

#include "absl/strings/str_cat.h"
#include "framework/attention/gated_linear.h"
#include "framework/attention/heads.h"
#include "framework/attention/mixer_cost.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/capabilities.h"
#include "framework/nn/layers.h"
#include "plugins/attention/linear_attention/linear_attention.pb.h"

namespace tvlab {
namespace {

constexpr float kNormalizerEps = 1e-6f;  // the paper's code (fast_transformers, eps = 1e-6)

class LinearAttention : public AttentionLayout {
 public:
  static constexpr uint32_t kCapabilities = kRecurrentMixer | kNeverFusesLayout;

  static absl::Status Validate(const LinearAttentionOptions& o, const ModelDims&) {
    if (o.chunk_size() <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "chunk_size must be > 0 (got ", o.chunk_size(), "); tokens per chunk of the training form, e.g. 64"));
    if (o.normalize() && o.feature_map() == LinearAttentionOptions::IDENTITY)
      return absl::InvalidArgumentError(
          "normalize divides by phi(q) . sum phi(k), which the IDENTITY feature map can make zero or "
          "negative; set feature_map: ELU_PLUS_ONE (the paper's) or RELU, or normalize: false");
    return absl::OkStatus();
  }
  static std::unique_ptr<AttentionLayout> Create(const LinearAttentionOptions& o, const ModelDims& dims) {
    return std::make_unique<LinearAttention>(o, dims);
  }

  LinearAttention(const LinearAttentionOptions& o, const ModelDims& dims) : options_(o), dims_(dims) {
    const int64_t c = dims.d_model;
    w_q_ = AddChild("w_q", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_k_ = AddChild("w_k", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_v_ = AddChild("w_v", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(c, c, dims.bias));
  }

  Var Forward(const AttentionInput& in) const override {
    const int64_t h = dims_.num_heads;
    Var q = FeatureMap(SplitHeads(w_q_->Forward(in.x), h));  // (B, H, T, hs)
    Var k = FeatureMap(SplitHeads(w_k_->Forward(in.x), h));  // (B, H, T, hs)
    Var v = SplitHeads(w_v_->Forward(in.x), h);              // (B, H, T, hs)
    if (!options_.normalize()) return w_o_->Forward(MergeHeads(MixGatedLinear(in, q, k, v, Var(), Chunk())));
    const int64_t b = v.dim(0), t = v.dim(2), hs = v.dim(3);
    Var ones(Tensor::Full({b, h, t, 1}, 1.0f));
    Var mixed = MixGatedLinear(in, q, k, Concat({v, ones}, 3), Var(), Chunk());  // (B, H, T, hs + 1)
    Var numerator = Slice(mixed, 3, 0, hs);                                       // (B, H, T, hs)
    Var normalizer = AddScalar(Slice(mixed, 3, hs, 1), kNormalizerEps);           // (B, H, T, 1)
    return w_o_->Forward(MergeHeads(Div(numerator, normalizer)));                 // (B, T, C)
  }

  // A fixed state, not a per-token cache.
  int64_t KvCacheBytesPerToken(int64_t) const override { return 0; }
  int64_t RecurrentStateBytes(int64_t bytes_per_element) const override {
    const int64_t hs = dims_.head_dim;
    return dims_.num_heads * hs * (hs + (options_.normalize() ? 1 : 0)) * bytes_per_element;
  }
  // Training's chunked form at options.chunk_size (mixer_cost.h).
  std::optional<double> MixingFlopsPerToken(int64_t seq_len) const override {
    return GatedLinearChunkedFlopsPerToken(  // values [v, 1] when normalising
        MixerShape{dims_.num_heads, dims_.head_dim, dims_.head_dim + (options_.normalize() ? 1 : 0), Chunk()},
        seq_len);
  }

 private:
  int64_t Chunk() const { return options_.chunk_size(); }
  // elu(x) + 1 = relu(x) + exp(min(x, 0)); relu; or x.
  Var FeatureMap(const Var& x) const {
    switch (options_.feature_map()) {
      case LinearAttentionOptions::ELU_PLUS_ONE:
        return Add(Relu(x), Exp(Scale(Relu(Scale(x, -1.0f)), -1.0f)));
      case LinearAttentionOptions::RELU:
        return Relu(x);
      default:
        return x;
    }
  }

  LinearAttentionOptions options_;
  ModelDims dims_;
  nn::Linear *w_q_, *w_k_, *w_v_, *w_o_;
};

TVLAB_REGISTER_ATTENTION_LAYOUT("linear_attention", LinearAttention, LinearAttentionOptions);

}  // namespace
}  // namespace tvlab
