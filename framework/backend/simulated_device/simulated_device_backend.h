#ifndef TVLAB_FRAMEWORK_BACKEND_SIMULATED_DEVICE_SIMULATED_DEVICE_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_SIMULATED_DEVICE_SIMULATED_DEVICE_BACKEND_H_

// `simulated_device`: a device backend that runs on any machine. Its kernels
// are the reference kernels, so its numbers are bitwise those of `reference`;
// its buffers live in host RAM but are handed out as device pointers that the
// host cannot dereference (the address with bit 62 set: a non-canonical
// x86-64 / AArch64 address, so a read faults at once). Only this backend's
// kernels and copies translate them back. Any framework code that reads
// device data behind the backend's back therefore crashes loudly here,
// exactly where it would read garbage on a GPU; Tensor::data() on such a
// tensor stops with a message first. Every model-level test runs on it
// (tests/simulated_device_test.cc).

#include <cstdint>

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

// Device pointers of the simulated device.
constexpr uintptr_t kSimulatedDeviceTag = uintptr_t{1} << 62;
inline bool IsSimulatedDevicePointer(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & kSimulatedDeviceTag) != 0;
}

class SimulatedDeviceBackend : public Backend {
 public:
  std::string name() const override { return "simulated_device"; }
  Device device() const override { return Device::kSimulated; }

  // Every kernel of kernels.def, forwarded to the reference with each
  // pointer argument (also those inside AdamWTensor) translated to its host
  // address; everything else passes through. Generated from the table
  // (simulated_device_backend.cc), so it never falls behind it.
#define TVLAB_KERNEL(name, kind, parameters, arguments) TVLAB_OVERRIDE_KERNEL(name);
#include "framework/backend/kernels.def"

 private:
  ReferenceBackend ref_;  // computes on the host addresses behind the device pointers
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_SIMULATED_DEVICE_SIMULATED_DEVICE_BACKEND_H_
