#ifndef TVLAB_FRAMEWORK_BACKEND_BACKEND_REGISTRY_H_
#define TVLAB_FRAMEWORK_BACKEND_BACKEND_REGISTRY_H_

// The registered backends: a static descriptor per backend that answers
// every capability question without constructing it (no oneDNN engine, no
// cuBLAS handle), and the one active backend that the framework's kernels
// run on (the one dispatch point for the device choice).
//
// A backend registers its descriptor once, at start-up, from its class
// (describe_backend.h):
//   const bool kRegistered = RegisterBackend(DescribeBackend<OnednnBackend>("cpu_onednn")
//                                                .WithPrecisions(&OnednnPrecisionSupport));
//
// Thread-safety: registration is static initialisation; lookups are
// read-only afterwards. The active backend is process-wide and not
// thread-safe to switch (tests and binaries switch it on one thread).

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/backend/backend.h"

namespace tvlab {

// Whether a backend runs GEMMs in a precision on this machine, and when not,
// why (e.g. the CPU feature it lacks; empty when there is nothing to add).
struct PrecisionSupport {
  bool supported = false;
  std::string why_not;
};

struct BackendDescriptor {
  std::string name;                       // runtime.backend
  Device device = Device::kCpu;           // where its buffers live
  std::array<bool, kKernelCount> kernels{};  // implemented, by Kernel
  // Whether its device is on this machine; `why_not` (may be null) says
  // why not. Asks the driver at most (no context, no handle).
  bool (*device_present)(std::string* why_not) = nullptr;
  // Its GEMM precisions on this machine (fp32 always).
  PrecisionSupport (*precision)(Precision) = nullptr;
  // A fresh instance; called only where device_present holds.
  std::unique_ptr<Backend> (*make)() = nullptr;

  bool Implements(Kernel kernel) const { return kernels[static_cast<int>(kernel)]; }
  // The required kernels it lacks, by name (empty when complete).
  std::vector<std::string> MissingKernels() const;
  bool Supports(Precision p) const { return precision(p).supported; }
  // The names of the precisions it supports here, fp32 first.
  std::vector<std::string> PrecisionNames() const;
  bool DevicePresent() const { return device_present(nullptr); }

  // Registration's settings (describe_backend.h starts from a host backend
  // that is always present and runs fp32 only).
  BackendDescriptor& OnDevice(Device where, bool (*present)(std::string* why_not)) {
    device = where;
    device_present = present;
    return *this;
  }
  BackendDescriptor& WithPrecisions(PrecisionSupport (*support)(Precision)) {
    precision = support;
    return *this;
  }
};

// Registers a backend (static registration). A duplicate name stops the
// process at start-up.
bool RegisterBackend(BackendDescriptor descriptor);
// Every registered name, sorted.
std::vector<std::string> RegisteredBackends();
// On success the descriptor of a registered backend; NotFound lists the
// registered ones (and a close match).
absl::StatusOr<const BackendDescriptor*> FindBackend(const std::string& name);
// The registered backends whose device is present here (e.g. gpu_cuda only
// on a machine with a GPU). Tests run over these and skip the others,
// saying so.
std::vector<std::string> UsableBackends();
// The usable backends whose buffers are host memory (cpu_onednn, reference).
// The plugin conformance suites compare these kernel by kernel; device
// backends run every plugin at model level instead
// (tests/simulated_device_test.cc) and every op in autograd/ops_test.cc.
std::vector<std::string> HostBackends();
// The usable backends that implement every required kernel.
std::vector<std::string> CompleteBackends();

// Creates a fresh instance of a registered backend (tests compare two).
// NotFound for an unknown name; FailedPrecondition "backend 'NAME' has no
// usable device here" when its device is absent.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& name);
// How many Backend objects this process has constructed so far (validation
// constructs none: framework/spec/validation_builds_no_backend_test.cc).
int64_t BackendsConstructed();

// The active backend. Defaults to "cpu_onednn" when linked in, else
// "reference".
Backend& CurrentBackend();
// The descriptor of CurrentBackend() (which kernels it implements).
const BackendDescriptor& CurrentBackendDescriptor();
// Selects a registered backend by name; NotFound lists the registered ones.
absl::Status SetBackend(const std::string& name);

// Step capture (framework/capture/): while set on this thread, CurrentBackend()
// on this thread returns `interposer`, which forwards every kernel to the
// active backend; CurrentBackendDescriptor() still describes the active one.
// Null clears.
void SetBackendInterposer(Backend* interposer);

// Switches the active backend for a scope (tests).
class ScopedBackend {
 public:
  explicit ScopedBackend(const std::string& name);
  ~ScopedBackend();

 private:
  std::string previous_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_BACKEND_REGISTRY_H_
