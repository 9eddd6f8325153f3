// GPT-2's initialisation (Radford et al. 2019, section 2.3; the released
// model code and nanoGPT's _init_weights): every weight matrix and embedding
// table N(0, 0.02); biases 0; norm gains and shifts as declared (1 and 0);
// and the projections that write into the residual stream scaled by
// 1/sqrt(N), N = 2 * layers (two residual additions per block): "we scale
// the weights of residual layers at initialization by a factor of 1/sqrt(N)
// where N is the number of residual layers". Those projections are the
// attention's output projection (<...>.attention.w_o.weight, and cross_attention.w_o) and the FFN's
// output projection (<...>.ffn.w_2.weight, every shipped FFN's name); the
// layers counted are those of the parameter's stack (an encoder-decoder's
// decoder has model.num_decoder_layers). Parameters that are not a rank-2
// weight, bias or norm (a plugin's own vectors, e.g. a sink logit) keep
// their declaration. Learning rates and the forward are unchanged.
//
// Example config: plugins/init/gpt2/example.pbtxt

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "framework/interfaces/init.h"
#include "plugins/init/gpt2/gpt2.pb.h"

namespace tvlab {
namespace {

class Gpt2Init : public Initializer {
 public:
  static absl::Status Validate(const Gpt2InitOptions& o, const InitArgs&) {
    if (!(o.std() > 0.0f && std::isfinite(o.std())))
      return absl::InvalidArgumentError(absl::StrCat("options.std must be a finite number > 0 (got ", o.std(),
                                                     "), e.g. 0.02 (GPT-2's)"));
    return absl::OkStatus();
  }
  static std::unique_ptr<Initializer> Create(const Gpt2InitOptions& o, const InitArgs& args) {
    return std::make_unique<Gpt2Init>(o, args.dims);
  }
  Gpt2Init(const Gpt2InitOptions& o, const ModelDims& dims) : options_(o), dims_(dims) {}

  Init InitFor(const InitParam& p) const override {
    if (p.role == ParamRole::kBias) return Init::Zeros();
    if (p.role == ParamRole::kNorm || p.shape.size() != 2) return p.declared;
    if (options_.scale_residual() && IsResidualProjection(p.name))
      return Init::Normal(options_.std() / std::sqrt(2.0f * static_cast<float>(LayersOfStack(p.name))));
    return Init::Normal(options_.std());
  }

 private:
  static bool IsResidualProjection(const std::string& name) {
    return absl::EndsWith(name, "attention.w_o.weight") || absl::EndsWith(name, ".ffn.w_2.weight");
  }
  int64_t LayersOfStack(const std::string& name) const {
    if (dims_.decoder_layers > 0 && absl::StartsWith(name, "decoder.")) return dims_.decoder_layers;
    return dims_.num_layers > 0 ? dims_.num_layers : 1;
  }

  Gpt2InitOptions options_;
  ModelDims dims_;
};

TVLAB_REGISTER_INIT("gpt2", Gpt2Init, Gpt2InitOptions);

}  // namespace
}  // namespace tvlab
