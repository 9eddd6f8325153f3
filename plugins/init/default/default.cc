// The default initialisation: every parameter is drawn as its module
// declares it (framework/nn/layers.h), PyTorch's defaults: a Linear's
// weight and bias U(-1/sqrt(in), 1/sqrt(in)), an embedding table N(0, 1),
// norm gains 1 and shifts 0, and each plugin's own choices. It sets no
// learning-rate multiplier, attention scale or head multiplier, so a model
// with it is bitwise the model before init plugins existed.
//
// Example config: plugins/init/default/example.pbtxt

#include "framework/interfaces/init.h"
#include "plugins/init/default/default.pb.h"

namespace tvlab {
namespace {

class DefaultInit : public Initializer {
 public:
  static std::unique_ptr<Initializer> Create(const DefaultInitOptions&, const InitArgs&) {
    return std::make_unique<DefaultInit>();
  }
  Init InitFor(const InitParam& p) const override { return p.declared; }
};

TVLAB_REGISTER_INIT("default", DefaultInit, DefaultInitOptions);

}  // namespace
}  // namespace tvlab
