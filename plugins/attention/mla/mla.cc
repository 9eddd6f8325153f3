// Multi-head latent attention (DeepSeek-V2, DeepSeek-AI 2024, section 2.1):
// keys and values of all H heads are rebuilt from a small per-token latent,
// and that latent is what the KV cache holds. Rotating the rebuilt keys
// would tie W_uk to each position and stop it from being absorbed into the
// queries at inference, so position lives in a separate "decoupled" part: a
// rotary key of d_r dims shared by every head and cached beside the latent.
//
// With m = x (self-attention) or memory (cross-attention), d_n = hs - d_r:
//   c      = m W_dkv                   (B, S, d_c)   cached ("latent")
//   k_C    = c W_uk,  v = c W_uv       (B, H, S, d_n) and (B, H, S, hs)
//   k_R    = RoPE(m W_kr)              (B, 1, S, d_r) cached ("rope_key")
//   c_q    = x W_dq  (or x when q_latent_dim = 0)
//   q_C    = c_q W_uq, q_R = RoPE(c_q W_qr)   (B, H, T, d_n), (B, H, T, d_r)
//   q_h = [q_C,h ; q_R,h],  k_h = [k_C,h ; k_R]      (hs = d_n + d_r each)
//   out = concat_h(attend(q_h, k_h, v_h)) W_o
// Unlike DeepSeek-V2 (d_h + d_r per query/key head), tvlab keeps query and
// key heads at hs = d_model / H so that every score plugin applies
// unchanged; no normalisation is applied to the latents (the paper's
// equations 9-11; its released code adds an RMSNorm). Keys and values are
// rebuilt from the latent at every call (no matrix absorption).
//
// RoPE acts on self-attention only, through the position plugin's
// RotateQuery / RotateKey on the d_r-wide parts; with position "none" or
// "sinusoidal" that is the identity and k_R is simply a shared key part.
//
// Built from the attention kit (framework/attention/): MLA caches and
// rotates by itself (KeyState, SelfAttentionPosition), since what it caches
// is not the keys Attend sees, then calls Attend with the context's rotation
// and cache cleared; Attend still adds the position logit bias and the mask.
//
// KV cache per token per layer: d_c + d_r numbers.
//
// Example config (configs/sort_digits_mla.pbtxt):
//   attention {
//     layout: "mla"
//     layout_options { [type.googleapis.com/tvlab.MlaOptions] { kv_latent_dim: 32 } }
//   }

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/attention/attend.h"
#include "framework/attention/heads.h"
#include "framework/attention/key_state.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/nn/layers.h"
#include "plugins/attention/mla/mla.pb.h"

namespace tvlab {
namespace {

struct MlaSizes {
  int64_t kv_latent;  // d_c
  int64_t rope;       // d_r
  int64_t q_latent;   // 0 = no query compression
};

MlaSizes Sizes(const MlaOptions& o, const ModelDims& dims) {
  MlaSizes s;
  s.kv_latent = o.kv_latent_dim() > 0 ? o.kv_latent_dim() : 4 * dims.head_dim;
  s.rope = o.rope_head_dim() > 0 ? o.rope_head_dim() : dims.head_dim / 4 * 2;
  s.q_latent = o.q_latent_dim();
  return s;
}

class Mla : public AttentionLayout {
 public:
  // The decoupled RoPE part is rotated; Attend adds any logit bias.
  static constexpr uint32_t kCapabilities = kAppliesRotaryPositions | kAppliesLogitBias;
  static absl::Status Validate(const MlaOptions& o, const ModelDims& dims) {
    if (o.kv_latent_dim() < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "kv_latent_dim must be >= 0 (got ", o.kv_latent_dim(), "); 0 means 4 * head_dim"));
    if (o.q_latent_dim() < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "q_latent_dim must be >= 0 (got ", o.q_latent_dim(), "); 0 means no query latent"));
    if (o.rope_head_dim() < 0 || o.rope_head_dim() % 2 != 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "rope_head_dim must be an even number >= 0 (got ", o.rope_head_dim(),
          "): rotary embeddings rotate pairs of dims"));
    const MlaSizes s = Sizes(o, dims);
    if (s.rope >= dims.head_dim)
      return absl::InvalidArgumentError(absl::StrCat(
          "rope_head_dim ", s.rope, " must be < head_dim ", dims.head_dim,
          " (= model.d_model / model.num_heads): the other head_dim - rope_head_dim dims of "
          "each key come from the latent; choose an even value below ",
          dims.head_dim));
    return absl::OkStatus();
  }

  // The resolved spec records the latent and rotary widths used.
  static void Resolve(MlaOptions* o, ModelDims* dims) {
    const MlaSizes s = Sizes(*o, *dims);
    o->set_kv_latent_dim(static_cast<int32_t>(s.kv_latent));
    o->set_rope_head_dim(static_cast<int32_t>(s.rope));
  }

  static std::unique_ptr<AttentionLayout> Create(const MlaOptions& o, const ModelDims& dims) {
    return std::make_unique<Mla>(dims, Sizes(o, dims));
  }

  Mla(const ModelDims& dims, const MlaSizes& sizes) : dims_(dims), sizes_(sizes) {
    const int64_t c = dims.d_model, h = dims.num_heads, hs = dims.head_dim;
    const int64_t nope = hs - sizes.rope;  // d_n: per-head key dims rebuilt from the latent
    const bool bias = dims.bias;
    const int64_t q_in = sizes.q_latent > 0 ? sizes.q_latent : c;
    if (sizes.q_latent > 0)
      w_dq_ = AddChild("w_dq", std::make_unique<nn::Linear>(c, sizes.q_latent, bias));
    w_uq_ = AddChild("w_uq", std::make_unique<nn::Linear>(q_in, h * nope, bias));
    w_dkv_ = AddChild("w_dkv", std::make_unique<nn::Linear>(c, sizes.kv_latent, bias));
    w_uk_ = AddChild("w_uk", std::make_unique<nn::Linear>(sizes.kv_latent, h * nope, bias));
    w_uv_ = AddChild("w_uv", std::make_unique<nn::Linear>(sizes.kv_latent, h * hs, bias));
    if (sizes.rope > 0) {
      w_qr_ = AddChild("w_qr", std::make_unique<nn::Linear>(q_in, h * sizes.rope, bias));
      w_kr_ = AddChild("w_kr", std::make_unique<nn::Linear>(c, sizes.rope, bias));
    }
    w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(h * hs, c, bias));
  }

  Var Forward(const AttentionInput& in) const override {
    const int64_t h = dims_.num_heads;
    const Var& source = in.memory.defined() ? in.memory : in.x;  // (B, S, C); new tokens only with a self cache
    const PositionEncoding* rotation = SelfAttentionPosition(in);  // nullptr for cross-attention
    Var cq = w_dq_ != nullptr ? w_dq_->Forward(in.x) : in.x;  // (B, T, d_cq or C)
    Var q = SplitHeads(w_uq_->Forward(cq), h);                // (B, H, T, d_n)
    Var latent = KeyState(in, "latent", /*token_dim=*/1, [&] {
      return w_dkv_->Forward(source);  // (B, S, d_c)
    });                                // (B, S, d_c) over every key
    Var k = SplitHeads(w_uk_->Forward(latent), h);  // (B, H, S, d_n)
    Var v = SplitHeads(w_uv_->Forward(latent), h);  // (B, H, S, hs)
    if (sizes_.rope > 0) {
      Var q_rope = SplitHeads(w_qr_->Forward(cq), h);  // (B, H, T, d_r)
      if (rotation) q_rope = rotation->RotateQuery(q_rope, in.position_offset);
      Var k_rope = KeyState(in, "rope_key", /*token_dim=*/2, [&] {
        Var fresh = SplitHeads(w_kr_->Forward(source), 1);  // (B, 1, S, d_r)
        return rotation ? rotation->RotateKey(fresh, in.position_offset) : fresh;
      });                                            // (B, 1, S, d_r) over every key
      q = Concat({q, q_rope}, 3);                    // (B, H, T, hs)
      k = Concat({k, RepeatHeads(k_rope, h)}, 3);    // (B, H, S, hs)
    }
    AttentionContext context = ContextFor(in, *this, dims_.dropout);
    context.rotation = nullptr;  // the decoupled parts are rotated above
    context.cache = nullptr;     // the latent and rope key are cached above
    Var heads = Attend(q, k, v, context);     // (B, H, T, hs)
    return w_o_->Forward(MergeHeads(heads));  // (B, T, C)
  }

  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const override {
    return (sizes_.kv_latent + sizes_.rope) * bytes_per_element;  // latent + shared rope key
  }

 private:
  ModelDims dims_;
  MlaSizes sizes_;
  nn::Linear* w_dq_ = nullptr;
  nn::Linear *w_uq_, *w_dkv_, *w_uk_, *w_uv_;
  nn::Linear* w_qr_ = nullptr;
  nn::Linear* w_kr_ = nullptr;
  nn::Linear* w_o_;
};

TVLAB_REGISTER_ATTENTION_LAYOUT("mla", Mla, MlaOptions);

}  // namespace
}  // namespace tvlab
