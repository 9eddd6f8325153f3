#ifndef TVLAB_FRAMEWORK_MODEL_FUSED_REQUEST_H_
#define TVLAB_FRAMEWORK_MODEL_FUSED_REQUEST_H_

// runtime.attention "fused" asks for the fused attention kernel
// (framework/attention/attend.h) on every attention call. A score, position
// or layout that cannot run inside it would make Attend take the unfused
// composition with nothing said; validation refuses that instead, naming
// the plugin and why ("auto" chooses per call and is never refused).
// Decided from the plugins' static capabilities (capabilities.h), which the
// conformance suites hold to what the plugins do.

#include "framework/core/problems.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Adds a problem per plugin of spec.model()'s attention, position and
// layout that cannot fuse, when spec.runtime().attention() is "fused".
// Per-layer patterns: called with each layer's spec (LayerExperiment),
// whose problems then name the layer.
void CheckFusedRequest(const Experiment& spec, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_FUSED_REQUEST_H_
