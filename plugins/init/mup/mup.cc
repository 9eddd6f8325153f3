// µP, the maximal update parametrisation (Yang et al. 2021, "Tensor
// Programs V"; the mup package's MuReadout, MuAdam and attention rule).
// With m = model.d_model / base_width (d_ff and the head size grow with
// d_model; heads and vocabulary do not), under AdamW:
//   parameter                         init                        lr
//   hidden matrices (role matrix)     as declared (U(+-1/sqrt(in)))  lr / m
//   embeddings (token, position)      as declared (N(0, 1))          lr
//   head weight and bias              as declared * sqrt(m)          lr
//                                     (weight 0 with readout_zero_init)
//   norms, other biases               as declared                    lr
//   forward: attention logits q.k * sqrt(hs_base) / hs (hs_base =
//   base_width / num_heads: mup's 8/d at hs_base = 64), and the head's
//   input multiplied by output_multiplier / m (MuReadout).
// At d_model = base_width this is the default parametrisation exactly
// (mup's backward compatibility at the base shape). The declared inits are
// PyTorch's, which mup's set_base_shapes starts from: it rescales only the
// readout (by sqrt(m)); hidden matrices already have variance 1/fan_in.
// Refused (with the fix): a score other than scaled_dot_product, whose
// scale µP replaces; model.scale_embeddings (a sqrt(d_model) input
// multiplier µP does not have); model.tie_embeddings (mup's
// MuSharedReadout is not implemented); an optimizer other than adamw (the
// learning-rate rules above are Adam's).
//
// Example config: plugins/init/mup/example.pbtxt

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/init.h"
#include "plugins/init/mup/mup.pb.h"

namespace tvlab {
namespace {

absl::Status CheckSpec(const Experiment& spec) {
  const ModelSpec& m = spec.model();
  auto refuse = [](const std::string& what) { return absl::InvalidArgumentError(what); };
  if (m.scale_embeddings())
    return refuse("model.scale_embeddings multiplies the embeddings by sqrt(d_model), an input multiplier that "
                  "grows with width, which µP does not have; set model { scale_embeddings: false }");
  if (m.tie_embeddings())
    return refuse("model.tie_embeddings is not supported under µP (mup's MuSharedReadout is not implemented); "
                  "set model { tie_embeddings: false }");
  auto score_ok = [](const AttentionSpec& a) { return a.score().empty() || a.score() == "scaled_dot_product"; };
  if (!score_ok(m.attention()))
    return refuse(absl::StrCat("model.attention.score is \"", m.attention().score(), "\": µP replaces the "
                                 "1/sqrt(hs) of scaled_dot_product by 1/hs and has no rule for another score; "
                                 "use score: \"scaled_dot_product\" or another model.init"));
  for (int i = 0; i < m.layer_overrides_size(); ++i)
    if (!score_ok(m.layer_overrides(i).attention()))
      return refuse(absl::StrCat("model.layer_overrides[", i, "].attention.score is \"",
                                 m.layer_overrides(i).attention().score(), "\": µP has a rule for "
                                 "scaled_dot_product only; drop the override's score or use another model.init"));
  const std::string& optimizer = spec.train().optimizer().plugin();
  if (!optimizer.empty() && optimizer != "adamw")
    return refuse(absl::StrCat("train.optimizer.plugin is \"", optimizer, "\": µP's learning-rate rules here "
                               "are AdamW's (hidden matrices lr * base_width / d_model); use plugin: \"adamw\", "
                               "or model.init \"default\" or \"gpt2\" with this optimizer"));
  return absl::OkStatus();
}

class MupInit : public Initializer {
 public:
  static absl::Status Validate(const MupInitOptions& o, const InitArgs& args) {
    if (o.base_width() <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "options.base_width must be > 0 (got ", o.base_width(), "): the model.d_model the learning rate "
          "was tuned at, e.g. 64"));
    if (!(o.output_multiplier() > 0.0f && std::isfinite(o.output_multiplier())))
      return absl::InvalidArgumentError(absl::StrCat("options.output_multiplier must be a finite number > 0 (got ",
                                                     o.output_multiplier(), "), e.g. 1"));
    if (args.dims.num_heads > 0 && o.base_width() % args.dims.num_heads != 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "options.base_width (", o.base_width(), ") must be a multiple of model.num_heads (",
          args.dims.num_heads, "): the base model has the same heads, each base_width / num_heads wide"));
    return args.spec != nullptr ? CheckSpec(*args.spec) : absl::OkStatus();
  }
  static std::unique_ptr<Initializer> Create(const MupInitOptions& o, const InitArgs& args) {
    return std::make_unique<MupInit>(o, args.dims);
  }
  MupInit(const MupInitOptions& o, const ModelDims& dims)
      : options_(o),
        width_mult_(static_cast<double>(dims.d_model) / o.base_width()),
        base_head_dim_(dims.num_heads > 0 ? static_cast<double>(o.base_width()) / dims.num_heads : 0.0) {}

  Init InitFor(const InitParam& p) const override {
    if (p.role != ParamRole::kHead && p.name != "head.bias") return p.declared;
    if (p.role == ParamRole::kHead && options_.readout_zero_init()) return Init::Zeros();
    Init init = p.declared;  // MuReadout's rescale: keeps the readout's entries O(1/sqrt(base_width))
    init.scale = static_cast<float>(init.scale * std::sqrt(width_mult_));
    return init;
  }
  float LrMultiplier(const InitParam& p) const override {
    return p.role == ParamRole::kMatrix ? static_cast<float>(1.0 / width_mult_) : 1.0f;
  }
  float AttentionScale(int64_t head_dim) const override {
    return static_cast<float>(std::sqrt(base_head_dim_) / static_cast<double>(head_dim));
  }
  float HeadInputScale() const override {
    return static_cast<float>(options_.output_multiplier() / width_mult_);
  }

 private:
  MupInitOptions options_;
  double width_mult_;
  double base_head_dim_;
};

TVLAB_REGISTER_INIT("mup", MupInit, MupInitOptions);

}  // namespace
}  // namespace tvlab
