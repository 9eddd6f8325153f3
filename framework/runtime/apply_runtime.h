#ifndef TVLAB_FRAMEWORK_RUNTIME_APPLY_RUNTIME_H_
#define TVLAB_FRAMEWORK_RUNTIME_APPLY_RUNTIME_H_

// A spec's runtime part put into effect for this process, in one place:
//   runtime.backend    SetBackend (framework/backend/backend.h), which also
//                      makes the backend's device the one new tensors go to
//   runtime.attention  SetAttentionKernel (framework/attention/attend.h)
//   runtime.precision  SetMatMulPrecision (framework/autograd/matmul_precision.h)
//   runtime.threads    omp_set_num_threads
// Every binary that builds a model calls it before building one: run
// (RunExperiment), generate, attention_dump and export, so a run's weights
// are always used under the runtime they were trained with. Not
// thread-safe: call it before any model is built or run.

#include "absl/status/status.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// On success every setting of `runtime` is in effect. On failure nothing is
// changed: a backend this machine cannot run (e.g. gpu_cuda without a GPU),
// or a value ValidateRuntimeSpec refuses (an unknown attention policy or
// precision, threads < 1), which a validated spec never has; the message
// names the field. Also refused: an instruction-set cap
// (ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA, framework/core/cpu_features.h)
// that oneDNN would silently ignore; the message names the variable.
absl::Status ApplyRuntime(const RuntimeSpec& runtime);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_RUNTIME_APPLY_RUNTIME_H_
