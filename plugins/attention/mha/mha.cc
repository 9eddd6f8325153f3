// Multi-head attention (Vaswani et al. 2017): H query heads and H key/value
// heads, each of size hs = C / H.
//
//   q = x W_q, k = m W_k, v = m W_v          (m = x, or the memory for
//   out = concat_h(attend(q_h, k_h, v_h)) W_o  cross-attention)
//
// KV cache per token per layer: 2 * H * hs numbers.
//
// Example config:
//   attention { layout: "mha" }

#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/model/attention_core.h"
#include "framework/nn/layers.h"
#include "plugins/attention/mha/mha.pb.h"

namespace tvlab {
namespace {

class Mha : public AttentionLayout {
 public:
  static std::unique_ptr<AttentionLayout> Create(const MhaOptions&, const ModelDims& dims) {
    return std::make_unique<Mha>(dims);
  }

  explicit Mha(const ModelDims& dims) : dims_(dims) {
    const int64_t c = dims.d_model;
    w_q_ = AddChild("w_q", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_k_ = AddChild("w_k", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_v_ = AddChild("w_v", std::make_unique<nn::Linear>(c, c, dims.bias));
    w_o_ = AddChild("w_o", std::make_unique<nn::Linear>(c, c, dims.bias));
  }

  Var Forward(const AttentionInput& in) const override {
    const bool self = !in.memory.defined();
    const Var& source = self ? in.x : in.memory;                     // (B, S, C)
    Var q = SplitHeads(w_q_->Forward(in.x), dims_.num_heads);        // (B, H, T, hs)
    Var k = SplitHeads(w_k_->Forward(source), dims_.num_heads);      // (B, H, S, hs)
    Var v = SplitHeads(w_v_->Forward(source), dims_.num_heads);      // (B, H, S, hs)
    if (self && in.position != nullptr) {  // rotary positions act on self-attention
      q = in.position->RotateQueryOrKey(q, in.position_offset);
      k = in.position->RotateQueryOrKey(k, in.position_offset);
    }
    Var heads = Attend(q, k, v, in, *this, dims_.dropout);  // (B, H, T, hs)
    return w_o_->Forward(MergeHeads(heads));                // (B, T, C)
  }

  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const override {
    return 2 * dims_.num_heads * dims_.head_dim * bytes_per_element;
  }

 private:
  ModelDims dims_;
  nn::Linear *w_q_, *w_k_, *w_v_, *w_o_;
};

TVLAB_REGISTER_ATTENTION_LAYOUT("mha", Mha, MhaOptions);

}  // namespace
}  // namespace tvlab
