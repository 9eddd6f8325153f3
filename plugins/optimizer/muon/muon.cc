// Muon, "MomentUm Orthogonalized by Newton-schulz" (Jordan et al. 2024;
// modded-nanogpt), for the matrices (role matrix: attention and FFN
// projections), and AdamW for the rest (embeddings, head, norms, biases), as
// Jordan's MuonWithAuxAdam. For a matrix P (rows, cols) with gradient G at
// rate lr (scheduled, times the group's lr_multiplier):
//   M <- momentum M + G                            (M = G at the first step)
//   U <- nesterov ? G + momentum M : M
//   O <- NewtonSchulz(U, ns_steps)                 (newton_schulz.h)
//   P <- P (1 - lr wd) - lr max(1, rows / cols)^(1/2) O
// (Jordan writes M <- lerp(M, G, 1 - momentum) and U <- lerp(G, M, momentum),
// which is (1 - momentum) times this; Newton-Schulz normalises U first, so
// the update is the same up to its 1e-7 guard.) A tensor of rank > 2 is
// taken as (dim 0, the rest). Every other parameter steps by AdamW (the
// backend's AdamWMany) at adam_lr, which the schedule scales alike:
// adam rate = adam_lr * (scheduled rate / lr). State: "<param>.momentum_buffer"
// for matrices, "<param>.exp_avg" and "<param>.exp_avg_sq" for the rest.
//
// Example config (configs/sort_digits_muon.pbtxt):
//   optimizer { plugin: "muon" options { [type.googleapis.com/tvlab.MuonOptions] { lr: 0.02 adam_lr: 1e-3 } } }

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/optimizer.h"
#include "plugins/optimizer/muon/muon.pb.h"
#include "plugins/optimizer/muon/newton_schulz.h"

namespace tvlab {
namespace {

absl::Status RequireUnit(const char* field, float value, const char* example) {
  if (value >= 0.0f && value < 1.0f) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " must be in [0, 1) (got ", value, "), e.g. ", example));
}

absl::Status RequirePositive(const char* field, float value, const char* example) {
  if (value > 0.0f) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " must be > 0 (got ", value, "), e.g. ", example));
}

// y <- y * s (elementwise, s a scalar), on the backend.
void ScaleInPlace(Tensor& y, float s) {
  const Tensor scalar = Tensor::Scalar(s);
  CurrentBackend().Binary(BinaryOp::kMul, y.ptr(), y.shape(), scalar.ptr(), {}, y.ptr(), y.shape());
}

// y <- y + s * x, on the backend.
void AddScaled(Tensor& y, const Tensor& x, float s) {
  Tensor scaled = Tensor::Empty(x.shape());
  const Tensor scalar = Tensor::Scalar(s);
  CurrentBackend().Binary(BinaryOp::kMul, x.ptr(), x.shape(), scalar.ptr(), {}, scaled.ptr(), x.shape());
  CurrentBackend().Binary(BinaryOp::kAdd, y.ptr(), y.shape(), scaled.ptr(), x.shape(), y.ptr(), y.shape());
}

class Muon : public Optimizer {
 public:
  static absl::Status Validate(const MuonOptions& o, const OptimizerArgs&) {
    for (absl::Status s : {RequirePositive("lr", o.lr(), "0.02"), RequireUnit("momentum", o.momentum(), "0.95"),
                           RequirePositive("adam_lr", o.adam_lr(), "3e-4"),
                           RequireUnit("adam_beta1", o.adam_beta1(), "0.9"),
                           RequireUnit("adam_beta2", o.adam_beta2(), "0.95"),
                           RequirePositive("adam_eps", o.adam_eps(), "1e-10")})
      if (!s.ok()) return s;
    if (o.ns_steps() < 1 || o.ns_steps() > 20)
      return absl::InvalidArgumentError(absl::StrCat("ns_steps must be in [1, 20] (got ", o.ns_steps(), "), e.g. 5"));
    if (!(o.weight_decay() >= 0.0f && o.adam_weight_decay() >= 0.0f))
      return absl::InvalidArgumentError(absl::StrCat("weight_decay and adam_weight_decay must be >= 0 (got ",
                                                     o.weight_decay(), ", ", o.adam_weight_decay(), ")"));
    return absl::OkStatus();
  }
  static std::unique_ptr<Optimizer> Create(const MuonOptions& options, const OptimizerArgs& args) {
    return std::make_unique<Muon>(options, args);
  }

  Muon(const MuonOptions& options, const OptimizerArgs& args) : options_(options), params_(args.params) {
    for (const OptimizerParam& p : params_) {
      state_.push_back(Tensor::Zeros(p.param.shape()));
      second_.push_back(IsMatrix(p) ? Tensor() : Tensor::Zeros(p.param.shape()));
    }
  }

  float lr() const override { return options_.lr(); }

  void Step(float lr) override {
    ++steps_;
    for (size_t i = 0; i < params_.size(); ++i)
      if (IsMatrix(params_[i]) && params_[i].param.grad().defined()) MuonStep(i, lr * params_[i].lr_multiplier);
    AdamStep(lr / options_.lr());
  }

  std::vector<std::pair<std::string, Var>> StateTensors() const override {
    std::vector<std::pair<std::string, Var>> out;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (IsMatrix(params_[i])) {
        out.emplace_back(params_[i].name + ".momentum_buffer", Var(state_[i]));
      } else {
        out.emplace_back(params_[i].name + ".exp_avg", Var(state_[i]));
        out.emplace_back(params_[i].name + ".exp_avg_sq", Var(second_[i]));
      }
    }
    return out;
  }

 private:
  static bool IsMatrix(const OptimizerParam& p) { return p.role == ParamRole::kMatrix && p.param.rank() >= 2; }

  // One matrix at `rate`.
  void MuonStep(size_t i, float rate) {
    Var& param = params_[i].param;
    const Tensor& grad = param.grad();
    Tensor& m = state_[i];
    ScaleInPlace(m, options_.momentum());
    AddScaled(m, grad, 1.0f);
    Tensor update = m;
    if (options_.nesterov()) {
      update = grad.Clone();
      AddScaled(update, m, options_.momentum());
    }
    const int64_t rows = grad.dim(0), cols = grad.numel() / rows;
    const Tensor orthogonal = NewtonSchulz(update, rows, cols, options_.ns_steps()).Reshape(grad.shape());
    Tensor& value = param.mutable_value();
    if (params_[i].decay && options_.weight_decay() > 0.0f) ScaleInPlace(value, 1.0f - rate * options_.weight_decay());
    const float shape_scale = std::sqrt(std::max(1.0f, static_cast<float>(rows) / static_cast<float>(cols)));
    AddScaled(value, orthogonal, -rate * shape_scale);
  }

  // Every other parameter with a gradient: AdamW at adam_lr times the
  // schedule's factor and the group's multiplier.
  void AdamStep(float schedule_factor) {
    for (float multiplier : DistinctLrMultipliers(params_)) {
      const AdamWHyper h{options_.adam_lr() * schedule_factor * multiplier, options_.adam_beta1(),
                         options_.adam_beta2(), options_.adam_eps(), options_.adam_weight_decay(), steps_};
      std::vector<AdamWTensor> tensors;
      for (size_t i = 0; i < params_.size(); ++i) {
        Var& param = params_[i].param;
        if (IsMatrix(params_[i]) || params_[i].lr_multiplier != multiplier || !param.grad().defined()) continue;
        tensors.push_back({param.mutable_value().ptr(), param.grad().ptr(), state_[i].ptr(), second_[i].ptr(),
                           state_[i].numel(), params_[i].decay ? options_.adam_weight_decay() : 0.0f});
      }
      if (!tensors.empty()) CurrentBackend().AdamWMany(tensors, h);
    }
  }

  MuonOptions options_;
  std::vector<OptimizerParam> params_;
  std::vector<Tensor> state_;   // matrices: the momentum; the rest: AdamW's m (each like its parameter)
  std::vector<Tensor> second_;  // AdamW's v; undefined for matrices
};

TVLAB_REGISTER_OPTIMIZER("muon", Muon, MuonOptions);

}  // namespace
}  // namespace tvlab
