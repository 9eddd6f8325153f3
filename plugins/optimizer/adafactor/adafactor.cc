// Adafactor (Shazeer & Stern 2018), with an explicit learning rate as
// transformers' Adafactor(relative_step=False, warmup_init=False). For each
// parameter p with gradient g at step t (1-based), rate lr (scheduled, times
// the group's lr_multiplier) and weight decay wd (0 where the group's
// weight_decay is off):
//   rate  = lr * (scale_parameter ? max(eps2, RMS(p)) : 1)
//   b2    = 1 - t^decay_rate;  u = g^2 + eps1
//   rank >= 2, as (rows, cols) = (numel / last dim, last dim): factored
//     R <- b2 R + (1 - b2) mean_cols(u)   (rows)
//     C <- b2 C + (1 - b2) mean_rows(u)   (cols)
//     U = g / sqrt(R / mean(R)) / sqrt(C) (R over rows, C over columns)
//   otherwise:  V <- b2 V + (1 - b2) u;  U = g / sqrt(V)
//   U <- U rate / max(1, RMS(U) / clip_threshold)
//   beta1 > 0:  M <- beta1 M + (1 - beta1) U;  U = M
//   p <- p - wd rate p - U
// Built from the backend's elementwise, reduction and sum-of-squares kernels
// (device_math.h; two scalars read back per parameter and step). State:
// "<param>.exp_avg_sq_row" and ".exp_avg_sq_col" (factored: rows + cols
// floats instead of rows x cols), ".exp_avg_sq" otherwise, ".exp_avg" with
// beta1.
//
// Example config (configs/sort_digits_adafactor.pbtxt):
//   optimizer { plugin: "adafactor" options { [type.googleapis.com/tvlab.AdafactorOptions] { lr: 3e-3 } } }

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/optimizer.h"
#include "plugins/optimizer/adafactor/adafactor.pb.h"
#include "plugins/optimizer/adafactor/device_math.h"

namespace tvlab {
namespace {

class Adafactor : public Optimizer {
 public:
  static absl::Status Validate(const AdafactorOptions& o, const OptimizerArgs&) {
    if (!(o.lr() > 0.0f)) return absl::InvalidArgumentError(absl::StrCat("lr must be > 0 (got ", o.lr(), "), e.g. 1e-3"));
    if (!(o.eps1() > 0.0f && o.eps2() > 0.0f))
      return absl::InvalidArgumentError(absl::StrCat("eps1 and eps2 must be > 0 (got ", o.eps1(), ", ", o.eps2(),
                                                     "), e.g. 1e-30 and 1e-3"));
    if (!(o.clip_threshold() > 0.0f))
      return absl::InvalidArgumentError(absl::StrCat("clip_threshold must be > 0 (got ", o.clip_threshold(), "), e.g. 1"));
    if (!(o.decay_rate() < 0.0f))
      return absl::InvalidArgumentError(absl::StrCat("decay_rate must be < 0 (got ", o.decay_rate(), "), e.g. -0.8"));
    if (!(o.beta1() >= 0.0f && o.beta1() < 1.0f))
      return absl::InvalidArgumentError(absl::StrCat("beta1 must be in [0, 1) (got ", o.beta1(), "); 0 = no first moment"));
    if (!(o.weight_decay() >= 0.0f))
      return absl::InvalidArgumentError(
          absl::StrCat("weight_decay must be >= 0 (got ", o.weight_decay(), "); 0 turns decay off"));
    return absl::OkStatus();
  }
  static std::unique_ptr<Optimizer> Create(const AdafactorOptions& options, const OptimizerArgs& args) {
    return std::make_unique<Adafactor>(options, args);
  }

  Adafactor(const AdafactorOptions& options, const OptimizerArgs& args) : options_(options) {
    for (const OptimizerParam& p : args.params) {
      Slot s{p};
      const int64_t n = p.param.value().numel();
      if (p.param.rank() >= 2) {
        s.cols = p.param.shape().back(), s.rows = n / s.cols;
        s.row = Tensor::Zeros({s.rows}), s.col = Tensor::Zeros({s.cols});
      } else {
        s.full = Tensor::Zeros(p.param.shape());
      }
      if (options_.beta1() > 0.0f) s.first = Tensor::Zeros(p.param.shape());
      slots_.push_back(std::move(s));
    }
  }

  float lr() const override { return options_.lr(); }

  void Step(float lr) override {
    ++steps_;
    const float beta2 = static_cast<float>(1.0 - std::pow(static_cast<double>(steps_), options_.decay_rate()));
    for (Slot& s : slots_)
      if (s.p.param.grad().defined()) StepOne(s, lr * s.p.lr_multiplier, beta2);
  }

  std::vector<std::pair<std::string, Var>> StateTensors() const override {
    std::vector<std::pair<std::string, Var>> out;
    for (const Slot& s : slots_) {
      if (s.rows > 0) {
        out.emplace_back(s.p.name + ".exp_avg_sq_row", Var(s.row));
        out.emplace_back(s.p.name + ".exp_avg_sq_col", Var(s.col));
      } else {
        out.emplace_back(s.p.name + ".exp_avg_sq", Var(s.full));
      }
      if (options_.beta1() > 0.0f) out.emplace_back(s.p.name + ".exp_avg", Var(s.first));
    }
    return out;
  }

 private:
  struct Slot {
    OptimizerParam p;
    int64_t rows = 0, cols = 0;  // factored: the parameter as (rows, cols)
    Tensor row, col;             // factored: (rows), (cols)
    Tensor full;                 // unfactored: like the parameter
    Tensor first;                // beta1 > 0: like the parameter
  };

  // U / sqrt(second moment) for one parameter, its moments updated with u.
  Tensor Preconditioned(Slot& s, const Tensor& g, const Tensor& u, float beta2) const {
    if (s.rows == 0) {  // unfactored
      Interpolate(s.full, u, beta2);
      return Apply(BinaryOp::kMul, InverseSqrt(s.full), g, g.shape());
    }
    const Shape matrix = {s.rows, s.cols};
    const Tensor u2 = u.Reshape(matrix);
    Interpolate(s.row, ApplyScalar(BinaryOp::kMul, SumTo(u2, {s.rows, 1}).Reshape({s.rows}), 1.0f / s.cols), beta2);
    Interpolate(s.col, ApplyScalar(BinaryOp::kMul, SumTo(u2, {1, s.cols}).Reshape({s.cols}), 1.0f / s.rows), beta2);
    const Tensor row_mean = ApplyScalar(BinaryOp::kMul, SumTo(s.row, {1}), 1.0f / s.rows);           // (1)
    const Tensor r = InverseSqrt(Apply(BinaryOp::kDiv, s.row, row_mean, {s.rows})).Reshape({s.rows, 1});
    const Tensor c = InverseSqrt(s.col).Reshape({1, s.cols});
    return Apply(BinaryOp::kMul, Apply(BinaryOp::kMul, r, c, matrix), g.Reshape(matrix), matrix).Reshape(g.shape());
  }

  void StepOne(Slot& s, float lr, float beta2) {
    Tensor& value = s.p.param.mutable_value();
    const Tensor& g = s.p.param.grad();
    const float rate =
        options_.scale_parameter() ? lr * static_cast<float>(std::max<double>(options_.eps2(), Rms(value))) : lr;
    const Tensor u = ApplyScalar(BinaryOp::kAdd, Apply(BinaryOp::kMul, g, g, g.shape()), options_.eps1());
    Tensor update = Preconditioned(s, g, u, beta2);
    const double clip = std::max(1.0, Rms(update) / options_.clip_threshold());
    update = ApplyScalar(BinaryOp::kMul, update, static_cast<float>(rate / clip));
    if (options_.beta1() > 0.0f) {
      Interpolate(s.first, update, options_.beta1());
      update = s.first;
    }
    if (s.p.decay && options_.weight_decay() > 0.0f) {
      const Tensor kept = Tensor::Scalar(1.0f - options_.weight_decay() * rate);
      CurrentBackend().Binary(BinaryOp::kMul, value.ptr(), value.shape(), kept.ptr(), {}, value.ptr(), value.shape());
    }
    CurrentBackend().Binary(BinaryOp::kSub, value.ptr(), value.shape(), update.ptr(), update.shape(), value.ptr(),
                            value.shape());
  }

  AdafactorOptions options_;
  std::vector<Slot> slots_;
};

TVLAB_REGISTER_OPTIMIZER("adafactor", Adafactor, AdafactorOptions);

}  // namespace
}  // namespace tvlab
