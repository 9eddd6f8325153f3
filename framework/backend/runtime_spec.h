#ifndef TVLAB_FRAMEWORK_BACKEND_RUNTIME_SPEC_H_
#define TVLAB_FRAMEWORK_BACKEND_RUNTIME_SPEC_H_

// Validation of spec.runtime: a registered backend that is usable on this
// machine and implements every required kernel, a thread count, an attention
// policy, and a GEMM precision the backend declares. Asks the backends'
// descriptors (backend_registry.h) and constructs no backend.

#include "framework/core/problems.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

void ValidateRuntimeSpec(const RuntimeSpec& runtime, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_RUNTIME_SPEC_H_
