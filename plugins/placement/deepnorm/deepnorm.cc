// DeepNorm residual wiring (Wang et al. 2022, "DeepNet: Scaling Transformers
// to 1,000 Layers", arXiv 2203.00555, eq. for x_{l+1} and table 1), a Post-LN
// whose residual is up-weighted:
//   x_{l+1} = norm(alpha * x_l + f(x_l))
// plus an init gain beta on the attention value and output projections and
// on the FFN (TransformerBlock::AfterInitialize applies it; a TEMPORARY home
// until the init plugin kind exists: NormPlacement::SublayerInitGain).
// Table 1 of the paper (N encoder layers, M decoder layers; torchscale's
// encoder_layers / decoder_layers, the same constants):
//   decoder-only (N = model.num_layers):      alpha = (2N)^(1/4),  beta = (8N)^(-1/4)
//   encoder-only (N = model.num_layers):      alpha = (2N)^(1/4),  beta = (8N)^(-1/4)
//   encoder-decoder, encoder stack:           alpha = 0.81 (N^4 M)^(1/16),
//                                             beta  = 0.87 (N^4 M)^(-1/16)
//   encoder-decoder, decoder stack:           alpha = (3M)^(1/4),  beta = (12M)^(-1/4)
// Every block ends normalized, so no final norm is needed (as Post-LN).
// Parameters per sublayer: "norm" (the name Post-LN's norm has).
//
// Example config (configs/sort_digits_deepnorm.pbtxt):
//   norm { placement: "deepnorm" }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/norm_placement.h"
#include "plugins/placement/deepnorm/deepnorm.pb.h"

namespace tvlab {
namespace {

struct AlphaBeta {
  double alpha = 1.0;
  double beta = 1.0;
};

// Table 1 of the paper, for the stack `args` describes.
AlphaBeta DeepnormConstants(const PlacementArgs& args) {
  const double n = static_cast<double>(args.dims.num_layers);
  const double m = static_cast<double>(args.dims.decoder_layers);
  if (m == 0) return {std::pow(2.0 * n, 0.25), std::pow(8.0 * n, -0.25)};
  if (args.in_decoder_stack) return {std::pow(3.0 * m, 0.25), std::pow(12.0 * m, -0.25)};
  const double depth = std::pow(n, 4.0) * m;
  return {0.81 * std::pow(depth, 1.0 / 16.0), 0.87 * std::pow(depth, -1.0 / 16.0)};
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
  AlphaBeta constants_;
  bool scale_init_;
};

TVLAB_REGISTER_NORM_PLACEMENT("deepnorm", Deepnorm, DeepnormOptions);

}  // namespace
}  // namespace tvlab
