// Post-LN residual wiring (the original Transformer, BERT):
//   norm(x + f(x))
// Every block ends normalized, so no final norm is needed.
//
// Example config (configs/sort_digits_post_ln.pbtxt):
//   norm { placement: "post_ln" }

#include "framework/autograd/ops.h"
#include "framework/interfaces/norm_placement.h"
#include "plugins/placement/post_ln/post_ln.pb.h"

namespace tvlab {
namespace {

class PostLnWrapper : public ResidualWrapper {
 public:
  explicit PostLnWrapper(std::unique_ptr<Normalization> norm) {
    norm_ = AddChild("norm", std::move(norm));
  }
  Var Forward(const Var& x, const Sublayer& sublayer) const override {
    return norm_->Forward(Add(x, sublayer(x)));  // (B, T, C)
  }

 private:
  Normalization* norm_;
};

class PostLn : public NormPlacement {
 public:
  static std::unique_ptr<NormPlacement> Create(const PostLnOptions&, const PlacementArgs& args) {
    return std::make_unique<PostLn>(args);
  }
  explicit PostLn(PlacementArgs args) : args_(std::move(args)) {}

  std::unique_ptr<ResidualWrapper> Wrap() const override {
    return std::make_unique<PostLnWrapper>(args_.make_norm());
  }
  bool NeedsFinalNorm() const override { return false; }

 private:
  PlacementArgs args_;
};

TVLAB_REGISTER_NORM_PLACEMENT("post_ln", PostLn, PostLnOptions);

}  // namespace
}  // namespace tvlab
