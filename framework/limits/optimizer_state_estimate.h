#ifndef TVLAB_FRAMEWORK_LIMITS_OPTIMIZER_STATE_ESTIMATE_H_
#define TVLAB_FRAMEWORK_LIMITS_OPTIMIZER_STATE_ESTIMATE_H_

// The optimizer's state per parameter element, for the memory estimate
// (memory_estimate.h), from the plugin itself rather than a table: the
// plugin train.optimizer names is built with its options over a probe of
// one 16 x 16 matrix (role matrix) and one 16-vector (role norm), and its
// StateTensors counted. AdamW gives 2, Lion 1, SGD 1 (its momentum
// buffer), Muon about 1.06 over the probe (a momentum buffer for the
// matrix, AdamW's two moments for the vector); a factored Adafactor's row
// and column statistics of a 16 x 16 matrix are 2/16 per element, more than
// for the larger matrices of a real model, so the probe errs high.

#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Floats of optimizer state per parameter element (>= 0). A spec whose
// optimizer does not resolve (validation reports it) counts AdamW's 2.
double OptimizerStateFloatsPerParameter(const OptimizerSpec& spec);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_LIMITS_OPTIMIZER_STATE_ESTIMATE_H_
