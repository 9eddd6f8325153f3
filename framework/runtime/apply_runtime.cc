#include "framework/runtime/apply_runtime.h"

#include <omp.h>

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "framework/attention/attend.h"
#include "framework/autograd/matmul_precision.h"
#include "framework/backend/backend.h"
#include "framework/backend/precision.h"
#include "framework/core/cpu_features.h"

namespace tvlab {

absl::Status ApplyRuntime(const RuntimeSpec& runtime) {
  // Everything is checked before anything changes.
  const std::optional<AttentionKernel> attention = ParseAttentionKernel(runtime.attention());
  if (!attention) {
    return absl::InvalidArgumentError(absl::StrCat("runtime.attention: '", runtime.attention(),
                                                   "' is not a policy; use auto, fused or unfused"));
  }
  const std::optional<Precision> precision = ParsePrecision(runtime.precision());
  if (!precision) {
    return absl::InvalidArgumentError(absl::StrCat("runtime.precision: '", runtime.precision(),
                                                   "' is not a precision; use fp32, tf32 or bf16"));
  }
  if (runtime.threads() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime.threads must be >= 1 (got ", runtime.threads(), ")"));
  }
  if (const std::string cap = IsaCapProblem(); !cap.empty()) return absl::InvalidArgumentError(cap);
  if (absl::Status set = SetBackend(runtime.backend()); !set.ok()) return set;
  SetAttentionKernel(*attention);
  SetMatMulPrecision(*precision);
  omp_set_num_threads(runtime.threads());
  return absl::OkStatus();
}

}  // namespace tvlab
