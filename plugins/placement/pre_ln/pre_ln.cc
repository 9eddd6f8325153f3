// Pre-LN residual wiring (Xiong et al. 2020; GPT-2, Llama):
//   x + f(norm(x))
// The residual stream itself is never normalized inside the stack, so the
// model adds a final norm after the last block (NeedsFinalNorm).
//
// Example config (configs/sort_digits.pbtxt):
//   norm { placement: "pre_ln" }

#include "framework/autograd/ops.h"
#include "framework/interfaces/norm_placement.h"
#include "plugins/placement/pre_ln/pre_ln.pb.h"

namespace tvlab {
namespace {

class PreLnWrapper : public ResidualWrapper {
 public:
  explicit PreLnWrapper(std::unique_ptr<Normalization> norm) {
    norm_ = AddChild("norm", std::move(norm));
  }
  Var Forward(const Var& x, const Sublayer& sublayer) const override {
    return Add(x, sublayer(norm_->Forward(x)));  // (B, T, C)
  }

 private:
  Normalization* norm_;
};

class PreLn : public NormPlacement {
 public:
  static std::unique_ptr<NormPlacement> Create(const PreLnOptions&, const PlacementArgs& args) {
    return std::make_unique<PreLn>(args);
  }
  explicit PreLn(PlacementArgs args) : args_(std::move(args)) {}

  std::unique_ptr<ResidualWrapper> Wrap() const override {
    return std::make_unique<PreLnWrapper>(args_.make_norm());
  }
  bool NeedsFinalNorm() const override { return true; }

 private:
  PlacementArgs args_;
};

TVLAB_REGISTER_NORM_PLACEMENT("pre_ln", PreLn, PreLnOptions);

}  // namespace
}  // namespace tvlab
