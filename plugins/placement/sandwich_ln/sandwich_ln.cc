// Sandwich-LN residual wiring (Ding et al. 2021, CogView, section 2.4 and
// figure 4: "Sandwich-LN"), a norm on the sublayer's input and one on its
// output, both inside the residual branch:
//   x + norm_out(f(norm_in(x)))
// The residual stream itself is never normalized inside the stack, so the
// model adds a final norm after the last block, as Pre-LN. The same function
// as peri_ln's default (norms: INPUT_AND_OUTPUT, Kim et al. 2025 / Gemma 2);
// both names are kept because the literature uses both.
//
// Parameters per sublayer: "norm" (input side, the name Pre-LN's norm has,
// so a Pre-LN checkpoint's norms load into it) and "out_norm".
//
// Example config (configs/sort_digits_sandwich_ln.pbtxt):
//   norm { placement: "sandwich_ln" }

#include "framework/autograd/ops.h"
#include "framework/interfaces/norm_placement.h"
#include "plugins/placement/sandwich_ln/sandwich_ln.pb.h"

namespace tvlab {
namespace {

class SandwichLnWrapper : public ResidualWrapper {
 public:
  explicit SandwichLnWrapper(const PlacementArgs& args) {
    norm_ = AddChild("norm", args.make_norm());
    out_norm_ = AddChild("out_norm", args.make_norm());
  }
  Var Forward(const Var& x, const Sublayer& sublayer) const override {
    return Add(x, out_norm_->Forward(sublayer(norm_->Forward(x))));  // (B, T, C)
  }

 private:
  Normalization* norm_;
  Normalization* out_norm_;
};

class SandwichLn : public NormPlacement {
 public:
  static std::unique_ptr<NormPlacement> Create(const SandwichLnOptions&, const PlacementArgs& args) {
    return std::make_unique<SandwichLn>(args);
  }
  explicit SandwichLn(PlacementArgs args) : args_(std::move(args)) {}

  std::unique_ptr<ResidualWrapper> Wrap() const override {
    return std::make_unique<SandwichLnWrapper>(args_);
  }
  bool NeedsFinalNorm() const override { return true; }

 private:
  PlacementArgs args_;
};

TVLAB_REGISTER_NORM_PLACEMENT("sandwich_ln", SandwichLn, SandwichLnOptions);

}  // namespace
}  // namespace tvlab
