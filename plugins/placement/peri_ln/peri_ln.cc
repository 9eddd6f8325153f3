// Peri-LN residual wiring: norms around each sublayer f, inside the residual
// branch, so the residual stream itself is never normalized in the stack
// (the model adds a final norm after the last block, as Pre-LN, Gemma 2 and
// OLMo 2 do). Two published forms, chosen by options.norms:
//   INPUT_AND_OUTPUT (default): x + norm_out(f(norm(x)))
//     Kim et al. 2025 (Peri-LN), Gemma 2's pre- and post-norms; the same
//     function as sandwich_ln (CogView's Sandwich-LN).
//   OUTPUT_ONLY: x + norm_out(f(x))
//     OLMo 2's "reordered norm" (no norm on the sublayer's input).
// (Kim et al. also normalize the embeddings once; that is not part of the
// block wiring and is not done here.)
//
// Parameters per sublayer: "norm" (input side; absent under OUTPUT_ONLY) and
// "out_norm".
//
// Example config (configs/sort_digits_peri_ln.pbtxt):
//   norm { placement: "peri_ln" }
// OLMo 2's form:
//   norm { placement: "peri_ln"
//          placement_options { [type.googleapis.com/tvlab.PeriLnOptions] { norms: OUTPUT_ONLY } } }

#include "framework/autograd/ops.h"
#include "framework/interfaces/norm_placement.h"
#include "plugins/placement/peri_ln/peri_ln.pb.h"

namespace tvlab {
namespace {

class PeriLnWrapper : public ResidualWrapper {
 public:
  PeriLnWrapper(const PlacementArgs& args, bool input_norm) {
    if (input_norm) norm_ = AddChild("norm", args.make_norm());
    out_norm_ = AddChild("out_norm", args.make_norm());
  }
  Var Forward(const Var& x, const Sublayer& sublayer) const override {
    const Var in = norm_ != nullptr ? norm_->Forward(x) : x;  // (B, T, C)
    return Add(x, out_norm_->Forward(sublayer(in)));         // (B, T, C)
  }

 private:
  Normalization* norm_ = nullptr;  // nullptr under OUTPUT_ONLY
  Normalization* out_norm_;
};

class PeriLn : public NormPlacement {
 public:
  static absl::Status Validate(const PeriLnOptions& options, const PlacementArgs&) {
    if (!PeriLnOptions::Norms_IsValid(options.norms()))
      return absl::InvalidArgumentError(
          "model.norm.placement_options.norms must be INPUT_AND_OUTPUT or OUTPUT_ONLY");
    return absl::OkStatus();
  }
  static std::unique_ptr<NormPlacement> Create(const PeriLnOptions& options,
                                               const PlacementArgs& args) {
    return std::make_unique<PeriLn>(args, options.norms() == PeriLnOptions::INPUT_AND_OUTPUT);
  }
  PeriLn(PlacementArgs args, bool input_norm) : args_(std::move(args)), input_norm_(input_norm) {}

  std::unique_ptr<ResidualWrapper> Wrap() const override {
    return std::make_unique<PeriLnWrapper>(args_, input_norm_);
  }
  bool NeedsFinalNorm() const override { return true; }

 private:
  PlacementArgs args_;
  bool input_norm_;
};

TVLAB_REGISTER_NORM_PLACEMENT("peri_ln", PeriLn, PeriLnOptions);

}  // namespace
}  // namespace tvlab
