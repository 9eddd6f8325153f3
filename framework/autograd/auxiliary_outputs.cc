#include "framework/autograd/auxiliary_outputs.h"

#include <utility>

#include "framework/autograd/ops.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

thread_local AuxiliaryOutputs* current_outputs = nullptr;

}  // namespace

void AuxiliaryOutputs::AddLoss(std::string name, float coefficient, const Var& loss) {
  TVLAB_CHECK(loss.defined() && loss.value().numel() == 1) << "auxiliary loss " << name << " is not a scalar";
  losses_.push_back({std::move(name), coefficient, loss});
}

void AuxiliaryOutputs::AddStatistic(std::string name, const Var& value) {
  TVLAB_CHECK(value.defined() && value.value().numel() == 1) << "statistic " << name << " is not a scalar";
  statistics_.push_back({std::move(name), value});
}

Var AuxiliaryOutputs::AddedTo(const Var& loss) const {
  Var total = loss;
  for (const AuxiliaryLoss& aux : losses_)
    total = Add(total, Scale(Reshape(aux.loss, loss.shape()), aux.coefficient));
  return total;
}

AuxiliaryOutputs* AuxiliaryOutputs::Current() { return current_outputs; }

AuxiliaryScope::AuxiliaryScope(AuxiliaryOutputs* outputs) : previous_(current_outputs) {
  current_outputs = outputs;
}

AuxiliaryScope::~AuxiliaryScope() { current_outputs = previous_; }

}  // namespace tvlab
