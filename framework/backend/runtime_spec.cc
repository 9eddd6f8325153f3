#include "framework/backend/runtime_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/backend/backend.h"

namespace tvlab {

void ValidateRuntimeSpec(const RuntimeSpec& runtime, Problems* p) {
  auto backend = MakeBackend(runtime.backend());
  if (!backend.ok()) {
    p->Add(absl::StrCat("runtime.backend: ", backend.status().message()));
  } else {
    // No silent fallback: a backend that lacks a kernel is refused here.
    const std::vector<std::string> missing = MissingKernels(**backend);
    if (!missing.empty())
      p->Add(absl::StrCat("runtime.backend: '", runtime.backend(),
                          "' does not implement the kernels ", absl::StrJoin(missing, ", "),
                          " that training needs; choose one of the complete backends (",
                          absl::StrJoin(CompleteBackends(), ", "), ")"));
  }
  p->RequirePositive("runtime.threads", runtime.threads(), "e.g. 1");
  if (runtime.attention() != "auto" && runtime.attention() != "fused" &&
      runtime.attention() != "unfused")
    p->Add(absl::StrCat("runtime.attention: '", runtime.attention(),
                        "' is not a way to run attention; use \"auto\" (the default), "
                        "\"fused\" or \"unfused\""));
}

}  // namespace tvlab
