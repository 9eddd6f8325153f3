#ifndef TVLAB_FRAMEWORK_AUTOGRAD_AUXILIARY_OUTPUTS_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_AUXILIARY_OUTPUTS_H_

// The auxiliary-output channel: during a training forward any module (an
// FFN, attention layout, position or mixer plugin, the model itself) may add
// named auxiliary losses, each with a coefficient, and named statistics.
// The training loop (framework/train/train_loop.h) collects them per
// micro-batch with an AuxiliaryScope around the forward, adds
// sum(coefficient * loss) to the training loss it backpropagates, and logs
// every loss (its value before the coefficient) and statistic, averaged over
// the logging interval, as train_log.csv columns, TensorBoard scalars
// ("auxiliary/<name>") and metrics.json entries (auxiliary_outputs).
//
// Modules declare what they may add and emit through Module
// (framework/nn/module.h: DeclareAuxiliaryLoss / DeclareAuxiliaryStatistic
// in the constructor, EmitAuxiliaryLoss / EmitAuxiliaryStatistic in the
// forward); this header is the collector underneath. With no scope open
// (evaluation, decoding, tests that do not ask) nothing is collected and a
// module should skip the computation (AuxiliaryOutputs::Current() is null).
//
// Values stay where they are computed (on the device): the collector keeps
// Vars; the training loop reads one scalar per output per micro-batch.
//
// Not thread-safe: the scope is per thread, as the forward is.

#include <string>
#include <vector>

#include "framework/autograd/var.h"

namespace tvlab {

struct AuxiliaryLoss {
  std::string name;   // full name: "<module path>.<declared name>"
  float coefficient;  // weight in the training loss
  Var loss;           // scalar (one element), part of the tape
};

struct AuxiliaryStatistic {
  std::string name;  // full name, as above
  Var value;         // scalar (one element); its gradient is never taken
};

class AuxiliaryOutputs {
 public:
  // REQUIRES: `loss` has one element.
  void AddLoss(std::string name, float coefficient, const Var& loss);
  // REQUIRES: `value` has one element.
  void AddStatistic(std::string name, const Var& value);

  const std::vector<AuxiliaryLoss>& losses() const { return losses_; }
  const std::vector<AuxiliaryStatistic>& statistics() const { return statistics_; }

  // `loss` + sum(coefficient * auxiliary loss), in the order added; `loss`
  // itself (the same Var, bit for bit) when no auxiliary loss was added.
  Var AddedTo(const Var& loss) const;

  // The collector of the innermost open scope on this thread, or null.
  static AuxiliaryOutputs* Current();

 private:
  std::vector<AuxiliaryLoss> losses_;
  std::vector<AuxiliaryStatistic> statistics_;
};

// Makes `outputs` (null: none) the current collector until destroyed;
// scopes nest.
class AuxiliaryScope {
 public:
  explicit AuxiliaryScope(AuxiliaryOutputs* outputs);
  ~AuxiliaryScope();
  AuxiliaryScope(const AuxiliaryScope&) = delete;
  AuxiliaryScope& operator=(const AuxiliaryScope&) = delete;

 private:
  AuxiliaryOutputs* previous_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_AUXILIARY_OUTPUTS_H_
