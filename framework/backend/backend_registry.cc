#include "framework/backend/backend_registry.h"

#include <atomic>

#include "framework/backend/describe_backend.h"
#include "framework/core/check.h"
#include "framework/core/registry.h"

namespace tvlab {
namespace {

Registry<BackendDescriptor>& Backends() {
  static auto* registry = new Registry<BackendDescriptor>("backend");
  return *registry;
}

std::atomic<int64_t>& ConstructedCount() {
  static auto* count = new std::atomic<int64_t>(0);
  return *count;
}

struct Active {
  std::unique_ptr<Backend> backend;
  const BackendDescriptor* descriptor = nullptr;
};

Active& ActiveBackend() {
  static auto* active = new Active();
  return *active;
}

// The registered backends whose descriptor satisfies `keep`, by name.
template <typename Predicate>
std::vector<std::string> BackendsWhere(Predicate keep) {
  std::vector<std::string> names;
  for (const std::string& name : RegisteredBackends())
    if (keep(**Backends().Get(name))) names.push_back(name);
  return names;
}

}  // namespace

Backend::Backend() { ConstructedCount().fetch_add(1); }

int64_t BackendsConstructed() { return ConstructedCount().load(); }

PrecisionSupport Fp32Only(Precision precision) {
  return {precision == Precision::kFp32, ""};
}

bool HostIsPresent(std::string*) { return true; }

std::vector<std::string> BackendDescriptor::MissingKernels() const {
  std::vector<std::string> missing;
  for (Kernel k : AllKernels())
    if (KernelKindOf(k) == KernelKind::kRequired && !Implements(k))
      missing.push_back(KernelName(k));
  return missing;
}

std::vector<std::string> BackendDescriptor::PrecisionNames() const {
  std::vector<std::string> names;
  for (Precision p : AllPrecisions())
    if (Supports(p)) names.push_back(PrecisionName(p));
  return names;
}

bool RegisterBackend(BackendDescriptor descriptor) {
  const std::string name = descriptor.name;
  return Backends().Register(name, std::move(descriptor));
}

std::vector<std::string> RegisteredBackends() { return Backends().Names(); }

absl::StatusOr<const BackendDescriptor*> FindBackend(const std::string& name) {
  return Backends().Get(name);
}

std::vector<std::string> UsableBackends() {
  return BackendsWhere([](const BackendDescriptor& d) { return d.DevicePresent(); });
}

std::vector<std::string> HostBackends() {
  return BackendsWhere(
      [](const BackendDescriptor& d) { return d.device == Device::kCpu && d.DevicePresent(); });
}

std::vector<std::string> CompleteBackends() {
  return BackendsWhere(
      [](const BackendDescriptor& d) { return d.DevicePresent() && d.MissingKernels().empty(); });
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& name) {
  auto descriptor = FindBackend(name);
  if (!descriptor.ok()) return descriptor.status();
  if (!(*descriptor)->DevicePresent())
    return absl::FailedPreconditionError("backend '" + name + "' has no usable device here");
  return (*descriptor)->make();
}

absl::Status SetBackend(const std::string& name) {
  auto made = MakeBackend(name);
  if (!made.ok()) return made.status();
  Active& active = ActiveBackend();
  active.backend = std::move(*made);
  active.descriptor = *FindBackend(name);
  SetCurrentDevice(active.backend->device());
  return absl::OkStatus();
}

namespace {
thread_local Backend* interposer = nullptr;
}  // namespace

void SetBackendInterposer(Backend* backend) { interposer = backend; }

Backend& CurrentBackend() {
  if (interposer != nullptr) return *interposer;
  Active& active = ActiveBackend();
  if (!active.backend) {
    std::string preferred = Backends().Contains("cpu_onednn") ? "cpu_onednn" : "reference";
    absl::Status status = SetBackend(preferred);
    TVLAB_CHECK(status.ok()) << status.message();
  }
  return *active.backend;
}

const BackendDescriptor& CurrentBackendDescriptor() {
  CurrentBackend();  // chooses the default when none was set
  return *ActiveBackend().descriptor;
}

ScopedBackend::ScopedBackend(const std::string& name) : previous_(CurrentBackend().name()) {
  absl::Status status = SetBackend(name);
  TVLAB_CHECK(status.ok()) << status.message();
}

ScopedBackend::~ScopedBackend() { (void)SetBackend(previous_); }

}  // namespace tvlab
