// DeepNet's initialisation (Wang et al. 2022, "DeepNet: Scaling
// Transformers to 1,000 Layers", arXiv 2203.00555), its figure 2:
//   if w is ['ffn', 'v_proj', 'out_proj']: xavier_normal_(w, gain=beta)
//   elif w is ['q_proj', 'k_proj']:        xavier_normal_(w, gain=1)
// Xavier normal: N(0, gain * sqrt(2 / (fan_in + fan_out))), a Linear's
// weight (out, in) having fan_in = in and fan_out = out. Here, in each block
// (<stack>.layers.<i>.):
//   attention.w_q / w_k weights (cross_attention's too)   Xavier, gain 1
//   attention.w_v / w_uv / w_o weights (MLA's value up-projection is w_uv)
//                                                          Xavier, gain beta
//   every rank-2 weight of the ffn (w_1, w_2, a GLU's w_3, MoE experts and
//   router)                                                Xavier, gain beta
//   the biases of those beta-gained layers, and the FFN's other tensors
//                                                          as declared * beta
// (the paper's pseudo-code says nothing of biases; torchscale scales them
// with their weights, as the deepnorm placement's scale_init does). Every
// other parameter (embeddings, head, norms, q/k biases, an attention
// layout's own tensors: MLA's down-projections, a gate, a mixer's state
// parameters) keeps its declaration. beta comes from table 1 of the paper
// by the depth and family of the parameter's stack
// (plugins/placement/deepnorm/deepnet_constants.h, the constants the
// deepnorm placement uses). Learning rates and the forward are unchanged.
//
// Placement and init: the paper pairs this init with DeepNorm's residual
// x_{l+1} = LN(alpha x_l + f(x_l)), model.norm.placement "deepnorm". That
// placement's scale_init (default true) multiplies whatever was drawn by
// beta again, so this plugin requires scale_init: false (refused
// otherwise, naming the field); and another placement is refused unless
// options.allow_other_placement (beta is derived for alpha's residual).
//
// Example config: plugins/init/deepnorm/example.pbtxt

#include <cmath>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "framework/interfaces/init.h"
#include "framework/schema/layer_overrides.h"
#include "plugins/init/deepnorm/deepnorm.pb.h"
#include "plugins/placement/deepnorm/deepnet_constants.h"
#include "plugins/placement/deepnorm/deepnorm.pb.h"

namespace tvlab {
namespace {

constexpr char kFix[] =
    "model { norm { placement: \"deepnorm\" placement_options { "
    "[type.googleapis.com/tvlab.DeepnormOptions] { scale_init: false } } } }";

// Checks the norm of one layer (as layer_overrides make it), named `where`:
// "model.norm", or the last override that sets the layer's norm.
absl::Status CheckPlacement(const NormSpec& norm, const std::string& where, bool allow_other) {
  const std::string& placement = norm.placement();
  if (placement != "deepnorm") {
    if (allow_other) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".placement is \"", placement.empty() ? "pre_ln (the default)" : placement,
        "\": model.init \"deepnorm\" draws DeepNet's gain beta, derived for DeepNorm's residual "
        "LN(alpha x + f(x)); set ", kFix, ", or set the init's options.allow_other_placement: true to "
        "use DeepNet's init with another placement (an ablation)"));
  }
  DeepnormOptions options;
  if (norm.has_placement_options() && !norm.placement_options().UnpackTo(&options))
    return absl::InvalidArgumentError(absl::StrCat(where, ".placement_options is a ",
                                                   norm.placement_options().type_url(),
                                                   ", not the deepnorm placement's tvlab.DeepnormOptions"));
  if (options.scale_init())
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".placement_options.scale_init is true (the default): the deepnorm placement would multiply "
        "the value/output projections and the FFN by beta after model.init \"deepnorm\" has drawn them with "
        "gain beta (beta twice); set ", kFix, ", or keep scale_init and use model.init \"default\" "
        "(PyTorch's init times beta)"));
  return absl::OkStatus();
}

// Every layer's placement, as its overrides leave it.
absl::Status CheckPlacements(const Experiment& spec, bool allow_other) {
  const ModelSpec& m = spec.model();
  for (StackRole stack : StacksOf(m)) {
    for (int64_t layer = 0; layer < LayersOf(m, stack); ++layer) {
      std::string where = "model.norm";
      for (int i : OverridesOf(m, stack, layer))
        if (m.layer_overrides(i).has_norm()) where = absl::StrCat("model.layer_overrides[", i, "].norm");
      const Experiment one = LayerExperiment(spec, stack, layer);
      absl::Status status = CheckPlacement(one.model().norm(), where, allow_other);
      if (!status.ok())
        return absl::Status(status.code(), absl::StrCat(status.message(), " (", LayerName(stack, layer), ")"));
    }
  }
  return absl::OkStatus();
}

// Where a parameter sits: its stack and, inside a block, the sublayer and the
// tensor's module ("decoder.layers.3.attention.w_v.bias": "decoder",
// "attention", "w_v").
struct Site {
  std::string stack;
  std::string sublayer;  // "" outside a block
  std::string module;
};

Site SiteOf(const std::string& name) {
  const std::vector<std::string> parts = absl::StrSplit(name, '.');
  Site site;
  site.stack = parts.empty() ? "" : parts[0];
  for (size_t k = 0; k + 3 < parts.size(); ++k) {
    if (parts[k] != "layers") continue;
    site.sublayer = parts[k + 2];
    site.module = parts[k + 3];
    break;
  }
  return site;
}

Init Scaled(Init init, float gain) {
  if (init.kind == Init::kOnes) return Init::Constant(gain);
  init.scale *= gain;
  return init;
}

class DeepnormInit : public Initializer {
 public:
  static absl::Status Validate(const DeepnormInitOptions& o, const InitArgs& args) {
    if (args.dims.num_layers <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "model.num_layers must be > 0 for model.init \"deepnorm\" (its beta follows from the depth; got ",
          args.dims.num_layers, ")"));
    return args.spec != nullptr ? CheckPlacements(*args.spec, o.allow_other_placement()) : absl::OkStatus();
  }
  static std::unique_ptr<Initializer> Create(const DeepnormInitOptions&, const InitArgs& args) {
    return std::make_unique<DeepnormInit>(args.dims);
  }
  explicit DeepnormInit(const ModelDims& dims) : dims_(dims) {}

  Init InitFor(const InitParam& p) const override {
    const Site site = SiteOf(p.name);
    const bool attention = site.sublayer == "attention" || site.sublayer == "cross_attention";
    const bool weight = p.shape.size() == 2 && absl::EndsWith(p.name, ".weight");
    const bool bias = p.role == ParamRole::kBias && absl::EndsWith(p.name, ".bias");
    if (attention && (site.module == "w_q" || site.module == "w_k"))
      return weight ? Xavier(p.shape, 1.0) : p.declared;
    const bool value_or_output = site.module == "w_v" || site.module == "w_uv" || site.module == "w_o";
    if (attention && value_or_output) {
      if (weight) return Xavier(p.shape, Beta(site.stack));
      return bias ? Scaled(p.declared, static_cast<float>(Beta(site.stack))) : p.declared;
    }
    if (site.sublayer != "ffn") return p.declared;
    if (p.role == ParamRole::kMatrix && p.shape.size() == 2) return Xavier(p.shape, Beta(site.stack));
    return Scaled(p.declared, static_cast<float>(Beta(site.stack)));
  }

 private:
  // beta of the stack `stack` ("encoder" or "decoder") belongs to.
  double Beta(const std::string& stack) const {
    const bool decoder_of_two = dims_.decoder_layers > 0 && stack == "decoder";
    return DeepnetConstantsFor(dims_.num_layers, dims_.decoder_layers, decoder_of_two).beta;
  }
  // shape (out, in): N(0, gain * sqrt(2 / (in + out))).
  static Init Xavier(const Shape& shape, double gain) {
    const double fans = static_cast<double>(shape[0] + shape[1]);
    return Init::Normal(static_cast<float>(gain * std::sqrt(2.0 / fans)));
  }

  ModelDims dims_;
};

TVLAB_REGISTER_INIT("deepnorm", DeepnormInit, DeepnormInitOptions);

}  // namespace
}  // namespace tvlab
