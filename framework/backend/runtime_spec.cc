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
void ValidatePrecision(const RuntimeSpec& runtime, const Backend* backend, Problems* p) {
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
  if (backend == nullptr || backend->SupportsPrecision(*precision)) return;
  const std::string note = backend->PrecisionNote(*precision);
  std::vector<std::string> elsewhere;  // the complete backends that do run it
  for (const std::string& name : CompleteBackends()) {
    auto other = MakeBackend(name);
    if (other.ok() && (*other)->SupportsPrecision(*precision)) elsewhere.push_back(name);
  }
  p->Add(absl::StrCat("runtime.precision: backend '", backend->name(), "' cannot run '",
                      runtime.precision(), "' GEMMs; it supports ",
                      absl::StrJoin(SupportedPrecisionNames(*backend), ", "),
                      note.empty() ? "" : absl::StrCat(" (", note, ")"),
                      ". Choose one of those", elsewhere.empty() ? "" : absl::StrCat(
                          ", or a backend that runs '", runtime.precision(), "' (",
                          absl::StrJoin(elsewhere, ", "), ")")));
}

}  // namespace

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
  ValidatePrecision(runtime, backend.ok() ? backend->get() : nullptr, p);
}

}  // namespace tvlab
