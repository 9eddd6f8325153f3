#ifndef TVLAB_FRAMEWORK_MODEL_INIT_SPEC_H_
#define TVLAB_FRAMEWORK_MODEL_INIT_SPEC_H_

// model.init: the init plugin a spec names, built, and what it decides:
// each parameter's initializer, and the learning-rate multiplier per
// parameter that its parametrisation adds to the optimizer's groups.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "framework/interfaces/init.h"
#include "framework/nn/module.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// The plugin model.init names (empty = "default"), with its options.
// REQUIRES: `spec` passed ValidateExperiment (errors are still returned).
absl::StatusOr<std::unique_ptr<Initializer>> BuildInitializer(const Experiment& spec);

// The parameter `name` of `shape` as an init plugin sees it (its role from
// RoleOfParameter).
InitParam InitParamOf(const std::string& name, const Shape& shape, const Init& declared);

// Fills `root`'s parameters as `init` says, keyed by (seed, name).
void InitializeWith(Module& root, uint64_t seed, const Initializer& init);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_INIT_SPEC_H_
