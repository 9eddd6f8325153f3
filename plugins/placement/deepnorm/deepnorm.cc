// DeepNorm residual wiring (Wang et al. 2022, "DeepNet: Scaling Transformers
// to 1,000 Layers", arXiv 2203.00555, eq. for x_{l+1} and table 1), a Post-LN
// whose residual is up-weighted:
//   x_{l+1} = norm(alpha * x_l + f(x_l))
// plus, with scale_init (the default), an init gain beta on the attention
// value and output projections and on the FFN: the block multiplies what
// the init plugin drew by beta (NormPlacement::SublayerInitGain, applied by
// TransformerBlock::AfterInitialize), whatever that init is. The paper's
// full initialisation (Xavier normal with gain beta, gain 1 on q and k) is
// the init plugin model.init "deepnorm" (plugins/init/deepnorm/), used with
// scale_init: false (it refuses scale_init: true, which would apply beta
// twice). alpha and beta come from deepnet_constants.h (table 1 of the
// paper, shared with that init plugin).
// Every block ends normalized, so no final norm is needed (as Post-LN).
// Parameters per sublayer: "norm" (the name Post-LN's norm has).
//
// Example config (configs/sort_digits_deepnorm.pbtxt):
//   norm { placement: "deepnorm" }

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/norm_placement.h"
#include "plugins/placement/deepnorm/deepnet_constants.h"
#include "plugins/placement/deepnorm/deepnorm.pb.h"

namespace tvlab {
namespace {

// The constants of the stack `args` describes (deepnet_constants.h).
DeepnetConstants DeepnormConstants(const PlacementArgs& args) {
  return DeepnetConstantsFor(args.dims.num_layers, args.dims.decoder_layers, args.in_decoder_stack);
}

class DeepnormWrapper : public ResidualWrapper {
 public:
  DeepnormWrapper(std::unique_ptr<Normalization> norm, float alpha) : alpha_(alpha) {
    norm_ = AddChild("norm", std::move(norm));
  }
  Var Forward(const Var& x, const Sublayer& sublayer) const override {
    return norm_->Forward(Add(Scale(x, alpha_), sublayer(x)));  // (B, T, C)
  }

 private:
  Normalization* norm_;
  float alpha_;
};

class Deepnorm : public NormPlacement {
 public:
  static absl::Status Validate(const DeepnormOptions&, const PlacementArgs& args) {
    if (args.dims.num_layers <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "model.num_layers must be > 0 for model.norm.placement \"deepnorm\" (its alpha and ",
          "beta follow from the depth; got ", args.dims.num_layers, ")"));
    return absl::OkStatus();
  }
  static std::unique_ptr<NormPlacement> Create(const DeepnormOptions& options,
                                               const PlacementArgs& args) {
    return std::make_unique<Deepnorm>(args, options.scale_init());
  }
  Deepnorm(PlacementArgs args, bool scale_init)
      : args_(std::move(args)), constants_(DeepnormConstants(args_)), scale_init_(scale_init) {}

  std::unique_ptr<ResidualWrapper> Wrap() const override {
    return std::make_unique<DeepnormWrapper>(args_.make_norm(),
                                             static_cast<float>(constants_.alpha));
  }
  bool NeedsFinalNorm() const override { return false; }
  float SublayerInitGain() const override {
    return scale_init_ ? static_cast<float>(constants_.beta) : 1.0f;
  }

 private:
  PlacementArgs args_;
  DeepnetConstants constants_;
  bool scale_init_;
};

TVLAB_REGISTER_NORM_PLACEMENT("deepnorm", Deepnorm, DeepnormOptions);

}  // namespace
}  // namespace tvlab
