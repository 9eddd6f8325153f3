#include "framework/backend/backend.h"

#include "framework/core/check.h"
#include "framework/core/registry.h"

namespace tvlab {
namespace {

using BackendFactory = std::unique_ptr<Backend> (*)();

Registry<BackendFactory>& Backends() {
  static auto* registry = new Registry<BackendFactory>("backend");
  return *registry;
}

struct Active {
  std::unique_ptr<Backend> backend;
};

Active& ActiveBackend() {
  static auto* active = new Active();
  return *active;
}

}  // namespace

bool RegisterBackend(const std::string& name, BackendFactory factory) {
  return Backends().Register(name, factory);
}

std::vector<std::string> RegisteredBackends() { return Backends().Names(); }

std::vector<std::string> UsableBackends() {
  std::vector<std::string> usable;
  for (const std::string& name : RegisteredBackends())
    if (MakeBackend(name).ok()) usable.push_back(name);
  return usable;
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& name) {
  auto entry = Backends().Get(name);
  if (!entry.ok()) return entry.status();
  std::unique_ptr<Backend> backend = (**entry)();
  // A factory returns null when its device is missing (e.g. no GPU).
  if (backend == nullptr)
    return absl::FailedPreconditionError("backend '" + name + "' has no usable device here");
  return backend;
}

absl::Status SetBackend(const std::string& name) {
  auto made = MakeBackend(name);
  if (!made.ok()) return made.status();
  ActiveBackend().backend = std::move(*made);
  return absl::OkStatus();
}

Backend& CurrentBackend() {
  Active& active = ActiveBackend();
  if (!active.backend) {
    std::string preferred = Backends().Contains("cpu_onednn") ? "cpu_onednn" : "reference";
    absl::Status status = SetBackend(preferred);
    TVLAB_CHECK(status.ok()) << status.message();
  }
  return *active.backend;
}

ScopedBackend::ScopedBackend(const std::string& name) : previous_(CurrentBackend().name()) {
  absl::Status status = SetBackend(name);
  TVLAB_CHECK(status.ok()) << status.message();
}

ScopedBackend::~ScopedBackend() { (void)SetBackend(previous_); }

}  // namespace tvlab
