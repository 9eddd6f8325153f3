// Lion, "evoLved sIgn mOmeNtum" (Chen et al. 2023, Algorithm 2): for each
// parameter p with gradient g, rate lr (scheduled, times the group's
// lr_multiplier) and weight decay wd (0 where the group's weight_decay is
// off):
//   c <- beta1 m + (1 - beta1) g
//   p <- p (1 - lr wd) - lr sign(c)                         (sign(0) = 0)
//   m <- beta2 m + (1 - beta2) g
// Every coordinate moves by exactly lr (plus decay): the update is a sign.
// The backend's LionMany kernel (reference, cpu_onednn threaded, gpu_cuda)
// does the arithmetic, one call per distinct lr_multiplier. State:
// "<param>.exp_avg" (m, zeros at the start); 4 bytes per parameter, half of
// AdamW's.
//
// Example config (configs/sort_digits_lion.pbtxt):
//   optimizer { plugin: "lion" options { [type.googleapis.com/tvlab.LionOptions] { lr: 3e-4 weight_decay: 0.1 } } }

#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/optimizer.h"
#include "plugins/optimizer/lion/lion.pb.h"

namespace tvlab {
namespace {

class Lion : public Optimizer {
 public:
  static absl::Status Validate(const LionOptions& o, const OptimizerArgs&) {
    if (!(o.lr() > 0.0f)) return absl::InvalidArgumentError(absl::StrCat("lr must be > 0 (got ", o.lr(), "), e.g. 1e-4"));
    if (!(o.beta1() >= 0.0f && o.beta1() < 1.0f))
      return absl::InvalidArgumentError(absl::StrCat("beta1 must be in [0, 1) (got ", o.beta1(), "), e.g. 0.9"));
    if (!(o.beta2() >= 0.0f && o.beta2() < 1.0f))
      return absl::InvalidArgumentError(absl::StrCat("beta2 must be in [0, 1) (got ", o.beta2(), "), e.g. 0.99"));
    if (!(o.weight_decay() >= 0.0f))
      return absl::InvalidArgumentError(
          absl::StrCat("weight_decay must be >= 0 (got ", o.weight_decay(), "); 0 turns decay off"));
    return absl::OkStatus();
  }
  static std::unique_ptr<Optimizer> Create(const LionOptions& options, const OptimizerArgs& args) {
    return std::make_unique<Lion>(options, args);
  }

  Lion(const LionOptions& options, const OptimizerArgs& args) : options_(options), params_(args.params) {
    for (const OptimizerParam& p : params_) m_.push_back(Tensor::Zeros(p.param.shape()));
  }

  float lr() const override { return options_.lr(); }

  void Step(float lr) override {
    ++steps_;
    for (float multiplier : DistinctLrMultipliers(params_)) {
      std::vector<AdamWTensor> tensors;  // every parameter of this rate with a gradient
      for (size_t i = 0; i < params_.size(); ++i) {
        Var& param = params_[i].param;
        if (params_[i].lr_multiplier != multiplier || !param.grad().defined()) continue;
        tensors.push_back({param.mutable_value().ptr(), param.grad().ptr(), m_[i].ptr(), nullptr, m_[i].numel(),
                           params_[i].decay ? options_.weight_decay() : 0.0f});
      }
      if (!tensors.empty())
        CurrentBackend().LionMany(tensors, {lr * multiplier, options_.beta1(), options_.beta2()});
    }
  }

  std::vector<std::pair<std::string, Var>> StateTensors() const override {
    std::vector<std::pair<std::string, Var>> out;
    for (size_t i = 0; i < params_.size(); ++i) out.emplace_back(params_[i].name + ".exp_avg", Var(m_[i]));
    return out;
  }

 private:
  LionOptions options_;
  std::vector<OptimizerParam> params_;
  std::vector<Tensor> m_;  // (each like its parameter)
};

TVLAB_REGISTER_OPTIMIZER("lion", Lion, LionOptions);

}  // namespace
}  // namespace tvlab
