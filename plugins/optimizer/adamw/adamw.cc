// AdamW (Loshchilov & Hutter 2019), torch.optim.AdamW's semantics: for each
// parameter p with gradient g at step t (1-based), rate lr (scheduled, times
// the group's lr_multiplier) and weight decay wd (0 where the group's
// weight_decay is off):
//   p <- p * (1 - lr * wd)
//   m <- beta1 m + (1 - beta1) g            v <- beta2 v + (1 - beta2) g^2
//   p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The backend's AdamWMany kernel (reference, cpu_onednn threaded, gpu_cuda)
// does the arithmetic: one call per distinct lr_multiplier, one in all when
// the groups share the rate. State: "<param>.exp_avg" (m) and
// "<param>.exp_avg_sq" (v), zeros at the start.
//
// Example config (configs/sort_digits.pbtxt):
//   optimizer { adamw { lr: 1e-3 } }   (the old spelling; resolved into)
//   optimizer { plugin: "adamw" options { [type.googleapis.com/tvlab.AdamWOptions] { lr: 1e-3 } } }

#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/optimizer.h"
#include "plugins/optimizer/adamw/adamw.pb.h"

namespace tvlab {
namespace {

class AdamW : public Optimizer {
 public:
  static absl::Status Validate(const AdamWOptions& o, const OptimizerArgs&) {
    if (!(o.lr() > 0.0f)) return absl::InvalidArgumentError(absl::StrCat("lr must be > 0 (got ", o.lr(), "), e.g. 1e-3"));
    if (!(o.beta1() >= 0.0f && o.beta1() < 1.0f))
      return absl::InvalidArgumentError(absl::StrCat("beta1 must be in [0, 1) (got ", o.beta1(), "), e.g. 0.9"));
    if (!(o.beta2() >= 0.0f && o.beta2() < 1.0f))
      return absl::InvalidArgumentError(absl::StrCat("beta2 must be in [0, 1) (got ", o.beta2(), "), e.g. 0.999"));
    if (!(o.eps() > 0.0f)) return absl::InvalidArgumentError(absl::StrCat("eps must be > 0 (got ", o.eps(), "), e.g. 1e-8"));
    if (!(o.weight_decay() >= 0.0f))
      return absl::InvalidArgumentError(
          absl::StrCat("weight_decay must be >= 0 (got ", o.weight_decay(), "); 0 turns decay off"));
    return absl::OkStatus();
  }
  static std::unique_ptr<Optimizer> Create(const AdamWOptions& options, const OptimizerArgs& args) {
    return std::make_unique<AdamW>(options, args);
  }

  AdamW(const AdamWOptions& options, const OptimizerArgs& args) : options_(options), params_(args.params) {
    for (const OptimizerParam& p : params_) {
      m_.push_back(Tensor::Zeros(p.param.shape()));
      v_.push_back(Tensor::Zeros(p.param.shape()));
    }
  }

  float lr() const override { return options_.lr(); }

  void Step(float lr) override {
    ++steps_;
    for (float multiplier : DistinctLrMultipliers(params_)) {
      const AdamWHyper h{lr * multiplier, options_.beta1(), options_.beta2(), options_.eps(),
                         options_.weight_decay(), steps_};
      std::vector<AdamWTensor> tensors;  // every parameter of this rate with a gradient
      for (size_t i = 0; i < params_.size(); ++i) {
        Var& param = params_[i].param;
        if (params_[i].lr_multiplier != multiplier || !param.grad().defined()) continue;
        tensors.push_back({param.mutable_value().ptr(), param.grad().ptr(), m_[i].ptr(), v_[i].ptr(),
                           m_[i].numel(), params_[i].decay ? options_.weight_decay() : 0.0f});
      }
      if (!tensors.empty()) CurrentBackend().AdamWMany(tensors, h);
    }
  }

  std::vector<std::pair<std::string, Var>> StateTensors() const override {
    std::vector<std::pair<std::string, Var>> out;
    for (size_t i = 0; i < params_.size(); ++i) {
      out.emplace_back(params_[i].name + ".exp_avg", Var(m_[i]));
      out.emplace_back(params_[i].name + ".exp_avg_sq", Var(v_[i]));
    }
    return out;
  }

 private:
  AdamWOptions options_;
  std::vector<OptimizerParam> params_;
  std::vector<Tensor> m_, v_;  // (each like its parameter)
};

TVLAB_REGISTER_OPTIMIZER("adamw", AdamW, AdamWOptions);

}  // namespace
}  // namespace tvlab
