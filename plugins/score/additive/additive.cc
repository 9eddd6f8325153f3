// Additive score (Bahdanau, Cho and Bengio 2015, "concat" in Luong et al.):
//   logit(q, k) = v^T tanh(W_q q + W_k k)
// a one-hidden-layer network on each (query, key) pair. W_q and W_k are
// (hidden, hs) with no bias, v is (hidden); one set per layer, shared by the
// heads as the other scores are. Unlike q.k it can express a non-bilinear
// match, at the cost of a (B, H, T, S, hidden) intermediate.
//
// Parameters: w_q.weight (hidden, hs), w_k.weight (hidden, hs), v (hidden).
//
// Example config: plugins/score/additive/example.pbtxt (in the folder, so a
// copy of the folder brings its own; the sort experiment with this score is
// configs/sort_digits_additive.pbtxt):
//   attention {
//     score: "additive"
//     score_options { [type.googleapis.com/tvlab.AdditiveOptions] { hidden_size: 16 } }
//   }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/attention_score.h"
#include "framework/nn/layers.h"
#include "plugins/score/additive/additive.pb.h"

namespace tvlab {
namespace {

class Additive : public AttentionScore {
 public:
  static absl::Status Validate(const AdditiveOptions& options, const ModelDims&) {
    if (options.hidden_size() < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "hidden_size must be >= 0 (got ", options.hidden_size(), "); 0 means head_dim"));
    return absl::OkStatus();
  }
  // The resolved spec records the hidden width used.
  static void Resolve(AdditiveOptions* options, ModelDims* dims) {
    if (options->hidden_size() == 0) options->set_hidden_size(static_cast<int32_t>(dims->head_dim));
  }
  static std::unique_ptr<AttentionScore> Create(const AdditiveOptions& options,
                                                const ModelDims& dims) {
    return std::make_unique<Additive>(
        dims.head_dim, options.hidden_size() > 0 ? options.hidden_size() : dims.head_dim);
  }

  Additive(int64_t head_dim, int64_t hidden) : hidden_(hidden) {
    w_q_ = AddChild("w_q", std::make_unique<nn::Linear>(head_dim, hidden, /*bias=*/false));
    w_k_ = AddChild("w_k", std::make_unique<nn::Linear>(head_dim, hidden, /*bias=*/false));
    v_ = AddParameter("v", {hidden}, Init::Uniform(1.0f / std::sqrt(static_cast<float>(hidden))));
  }

  Var Logits(const Var& q, const Var& k) const override {
    const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), s = k.dim(2);
    Var qh = Reshape(w_q_->Forward(q), {b, h, t, 1, hidden_});  // (B, H, T, 1, D)
    Var kh = Reshape(w_k_->Forward(k), {b, h, 1, s, hidden_});  // (B, H, 1, S, D)
    Var e = Tanh(Add(qh, kh));                                  // (B, H, T, S, D)
    Var logits = MatMul(e, Reshape(v_, {hidden_, 1}));          // (B, H, T, S, D) x (D, 1) -> (B, H, T, S, 1)
    return Reshape(logits, {b, h, t, s});                       // (B, H, T, S)
  }

 private:
  int64_t hidden_;  // D
  nn::Linear *w_q_, *w_k_;
  Var v_;
};

TVLAB_REGISTER_ATTENTION_SCORE("additive", Additive, AdditiveOptions);

}  // namespace
}  // namespace tvlab
