#include "framework/backend/runtime_spec.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/backend/backend.h"

namespace tvlab {
namespace {

// runtime.precision: a known name that the chosen backend declares.
void ValidatePrecision(const RuntimeSpec& runtime, const BackendDescriptor* backend, Problems* p) {
  const std::optional<Precision> precision = ParsePrecision(runtime.precision());
  if (!precision) {
    std::vector<std::string> names;
    for (Precision known : AllPrecisions())
      names.push_back(absl::StrCat("\"", PrecisionName(known), "\""));
    p->Add(absl::StrCat("runtime.precision: '", runtime.precision(),
                        "' is not a precision; use one of ", absl::StrJoin(names, ", "),
                        " (fp32 is the default)"));
    return;
  }
  if (backend == nullptr) return;
  const PrecisionSupport support = backend->precision(*precision);
  if (support.supported) return;
  std::vector<std::string> elsewhere;  // the complete backends that do run it
  for (const std::string& name : CompleteBackends())
    if ((*FindBackend(name))->Supports(*precision)) elsewhere.push_back(name);
  const std::string& note = support.why_not;
  p->Add(absl::StrCat("runtime.precision: backend '", backend->name, "' cannot run '",
                      runtime.precision(), "' GEMMs; it supports ",
                      absl::StrJoin(backend->PrecisionNames(), ", "),
                      note.empty() ? "" : absl::StrCat(" (", note, ")"),
                      ". Choose one of those", elsewhere.empty() ? "" : absl::StrCat(
                          ", or a backend that runs '", runtime.precision(), "' (",
                          absl::StrJoin(elsewhere, ", "), ")")));
}

// runtime.backend: registered, its device here, every required kernel. On
// success returns its descriptor (for the precision check), else null.
const BackendDescriptor* ValidateBackend(const RuntimeSpec& runtime, Problems* p) {
  auto found = FindBackend(runtime.backend());
  if (!found.ok()) {
    p->Add(absl::StrCat("runtime.backend: ", found.status().message()));
    return nullptr;
  }
  const BackendDescriptor& backend = **found;
  if (!backend.DevicePresent()) {
    p->Add(absl::StrCat("runtime.backend: backend '", backend.name,
                        "' has no usable device here"));
    return nullptr;
  }
  // No silent fallback: a backend that lacks a kernel is refused here.
  const std::vector<std::string> missing = backend.MissingKernels();
  if (!missing.empty())
    p->Add(absl::StrCat("runtime.backend: '", runtime.backend(),
                        "' does not implement the kernels ", absl::StrJoin(missing, ", "),
                        " that training needs; choose one of the complete backends (",
                        absl::StrJoin(CompleteBackends(), ", "), ")"));
  return &backend;
}

}  // namespace

void ValidateRuntimeSpec(const RuntimeSpec& runtime, Problems* p) {
  const BackendDescriptor* backend = ValidateBackend(runtime, p);
  p->RequirePositive("runtime.threads", runtime.threads(), "e.g. 1");
  if (runtime.attention() != "auto" && runtime.attention() != "fused" &&
      runtime.attention() != "unfused")
    p->Add(absl::StrCat("runtime.attention: '", runtime.attention(),
                        "' is not a way to run attention; use \"auto\" (the default), "
                        "\"fused\" or \"unfused\""));
  ValidatePrecision(runtime, backend, p);
}

}  // namespace tvlab
