// SGD with momentum and Nesterov's correction, torch.optim.SGD's semantics
// (dampening 0): for each parameter p with gradient g, rate lr (scheduled,
// times the group's lr_multiplier) and weight decay wd (0 where the group's
// weight_decay is off):
//   g <- g + wd p                                      (coupled L2, as torch)
//   momentum > 0:  b <- momentum b + g  (b = g at the first step)
//                  g <- nesterov ? g + momentum b : b
//   p <- p - lr g
// The backend's SgdMany kernel (reference, cpu_onednn threaded, gpu_cuda)
// does the arithmetic, one call per distinct lr_multiplier. State with
// momentum: "<param>.momentum_buffer" (zeros at the start); none without.
//
// Example config (configs/sort_digits_sgd.pbtxt):
//   optimizer { plugin: "sgd" options { [type.googleapis.com/tvlab.SgdOptions] { lr: 0.1 momentum: 0.9 nesterov: true } } }

#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/optimizer.h"
#include "plugins/optimizer/sgd/sgd.pb.h"

namespace tvlab {
namespace {

class Sgd : public Optimizer {
 public:
  static absl::Status Validate(const SgdOptions& o, const OptimizerArgs&) {
    if (!(o.lr() > 0.0f)) return absl::InvalidArgumentError(absl::StrCat("lr must be > 0 (got ", o.lr(), "), e.g. 0.1"));
    if (!(o.momentum() >= 0.0f && o.momentum() < 1.0f))
      return absl::InvalidArgumentError(
          absl::StrCat("momentum must be in [0, 1) (got ", o.momentum(), "); 0 = plain SGD, e.g. 0.9"));
    if (o.nesterov() && o.momentum() == 0.0f)
      return absl::InvalidArgumentError("nesterov needs momentum > 0; set momentum (e.g. 0.9) or nesterov: false");
    if (!(o.weight_decay() >= 0.0f))
      return absl::InvalidArgumentError(
          absl::StrCat("weight_decay must be >= 0 (got ", o.weight_decay(), "); 0 turns decay off"));
    return absl::OkStatus();
  }
  static std::unique_ptr<Optimizer> Create(const SgdOptions& options, const OptimizerArgs& args) {
    return std::make_unique<Sgd>(options, args);
  }

  Sgd(const SgdOptions& options, const OptimizerArgs& args) : options_(options), params_(args.params) {
    if (options_.momentum() == 0.0f) return;
    for (const OptimizerParam& p : params_) buffers_.push_back(Tensor::Zeros(p.param.shape()));
  }

  float lr() const override { return options_.lr(); }

  void Step(float lr) override {
    ++steps_;
    const bool momentum = !buffers_.empty();
    for (float multiplier : DistinctLrMultipliers(params_)) {
      std::vector<AdamWTensor> tensors;  // every parameter of this rate with a gradient
      for (size_t i = 0; i < params_.size(); ++i) {
        Var& param = params_[i].param;
        if (params_[i].lr_multiplier != multiplier || !param.grad().defined()) continue;
        tensors.push_back({param.mutable_value().ptr(), param.grad().ptr(), momentum ? buffers_[i].ptr() : nullptr,
                           nullptr, param.value().numel(), params_[i].decay ? options_.weight_decay() : 0.0f});
      }
      if (!tensors.empty())
        CurrentBackend().SgdMany(tensors, {lr * multiplier, options_.momentum(), options_.nesterov()});
    }
  }

  std::vector<std::pair<std::string, Var>> StateTensors() const override {
    std::vector<std::pair<std::string, Var>> out;
    for (size_t i = 0; i < buffers_.size(); ++i) out.emplace_back(params_[i].name + ".momentum_buffer", Var(buffers_[i]));
    return out;
  }

 private:
  SgdOptions options_;
  std::vector<OptimizerParam> params_;
  std::vector<Tensor> buffers_;  // (each like its parameter); empty without momentum
};

TVLAB_REGISTER_OPTIMIZER("sgd", Sgd, SgdOptions);

}  // namespace
}  // namespace tvlab
