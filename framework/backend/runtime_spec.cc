#include "framework/backend/runtime_spec.h"

#include "absl/strings/str_cat.h"
#include "framework/backend/backend.h"

namespace tvlab {

void ValidateRuntimeSpec(const RuntimeSpec& runtime, Problems* p) {
  auto backend = MakeBackend(runtime.backend());
  if (!backend.ok()) p->Add(absl::StrCat("runtime.backend: ", backend.status().message()));
  p->RequirePositive("runtime.threads", runtime.threads(), "e.g. 1");
}

}  // namespace tvlab
