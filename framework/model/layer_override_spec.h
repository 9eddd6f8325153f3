#ifndef TVLAB_FRAMEWORK_MODEL_LAYER_OVERRIDE_SPEC_H_
#define TVLAB_FRAMEWORK_MODEL_LAYER_OVERRIDE_SPEC_H_

// Validation of model.layer_overrides (per-layer patterns,
// framework/schema/layer_overrides.h): each override's own fields (which
// layers, which stack), then every layer's combination of plugins, as
// ValidateModelPlugins checks the model's, once per distinct combination.
// A problem of a layer names the override and field that caused it, e.g.
// "model.layer_overrides[1].attention.layout_options (gqa; decoder layer 3): ...".

#include "framework/core/problems.h"
#include "framework/interfaces/model_dims.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// REQUIRES: spec.model()'s sizes are valid (`dims` from them).
void ValidateLayerOverrides(const Experiment& spec, const ModelDims& dims, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_LAYER_OVERRIDE_SPEC_H_
