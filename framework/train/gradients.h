#ifndef TVLAB_FRAMEWORK_TRAIN_GRADIENTS_H_
#define TVLAB_FRAMEWORK_TRAIN_GRADIENTS_H_

// The gradients of a step as a whole: clipping by the global norm, the
// norm itself, zeroing. The optimizers (framework/interfaces/optimizer.h)
// update the parameters from them.

#include <string>
#include <utility>
#include <vector>

#include "framework/autograd/var.h"

namespace tvlab {

// Multiplies every gradient by min(1, max_norm / norm); returns the norm
// before clipping.
double ClipGradNorm(const std::vector<std::pair<std::string, Var>>& params, double max_norm);

// Sets every gradient to undefined (zero).
void ZeroGrads(const std::vector<std::pair<std::string, Var>>& params);
// sqrt(sum of squared gradients) over all parameters.
double GlobalGradNorm(const std::vector<std::pair<std::string, Var>>& params);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_GRADIENTS_H_
