#ifndef TVLAB_FRAMEWORK_TRAIN_OPTIMIZER_SPEC_H_
#define TVLAB_FRAMEWORK_TRAIN_OPTIMIZER_SPEC_H_

// train.optimizer: its validation, and the optimizer plugin it names built
// over a model's parameters with their roles and groups.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/core/problems.h"
#include "framework/interfaces/init.h"
#include "framework/interfaces/optimizer.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Adds to `p` what is wrong with a resolved train.optimizer: an unknown
// plugin, options of another type, the plugin's own Validate, the old
// spelling beside another plugin, a negative or non-finite group
// lr_multiplier. Each message names the field path.
void ValidateOptimizerSpec(const OptimizerSpec& spec, Problems* p);

// The group settings of `role` in `groups`.
const ParamGroup& GroupOf(const ParamGroups& groups, ParamRole role);

// Each named parameter with its role (RoleOfParameter) and its group's
// lr_multiplier and weight-decay switch, in the order given.
// `lr_scale` (if given) multiplies each parameter's lr_multiplier: the init
// plugin's parametrisation (Initializer::LrMultiplier; µP).
using LrScale = std::function<float(const std::string& name, const Shape& shape)>;
// The learning-rate scale of an init plugin's parametrisation
// (Initializer::LrMultiplier of each parameter).
LrScale LrScaleOf(std::shared_ptr<const Initializer> init);

std::vector<OptimizerParam> OptimizerParams(const ParamGroups& groups,
                                            const std::vector<std::pair<std::string, Var>>& params,
                                            const LrScale& lr_scale = nullptr);

// The plugin train.optimizer names, with its options, over `params`.
// REQUIRES: `spec` passed ValidateOptimizerSpec (errors are still returned).
absl::StatusOr<std::unique_ptr<Optimizer>> BuildOptimizer(
    const OptimizerSpec& spec, const std::vector<std::pair<std::string, Var>>& params,
    const LrScale& lr_scale = nullptr);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_OPTIMIZER_SPEC_H_
