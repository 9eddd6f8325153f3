#ifndef TVLAB_FRAMEWORK_BACKEND_DESCRIBE_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_DESCRIBE_BACKEND_H_

// A backend's descriptor from its class, for RegisterBackend
// (backend_registry.h). The kernels it implements are read from the class
// at compile time: kernel K is implemented when B or a base between B and
// Backend declares it (TVLAB_OVERRIDE_KERNEL(K)), i.e. when &B::K is not
// Backend's own member; Composed kernels always are (Backend has a body).
// No list of kernels is kept by hand anywhere.

#include <memory>
#include <string>
#include <type_traits>

#include "framework/backend/backend.h"
#include "framework/backend/backend_registry.h"

namespace tvlab {

// The kernels class B implements, by Kernel.
template <class B>
constexpr std::array<bool, kKernelCount> KernelsOf() {
  static_assert(std::is_base_of<Backend, B>::value, "a backend derives from Backend");
  return {{
#define TVLAB_KERNEL(name, kind, parameters, arguments)   \
  KernelKind::k##kind == KernelKind::kComposed ||         \
      !std::is_same<decltype(&B::name), decltype(&Backend::name)>::value,
#include "framework/backend/kernels.def"
  }};
}

// fp32 only: a backend that declares no other precision.
PrecisionSupport Fp32Only(Precision precision);
// A host backend's device: always present.
bool HostIsPresent(std::string* why_not);

// The descriptor of backend class B registered as `name`: its kernels, a
// factory, and the defaults of a host backend (device kCpu, always present,
// fp32 only) that OnDevice and WithPrecisions replace.
template <class B>
BackendDescriptor DescribeBackend(std::string name) {
  BackendDescriptor d;
  d.name = std::move(name);
  d.kernels = KernelsOf<B>();
  d.device = Device::kCpu;
  d.device_present = &HostIsPresent;
  d.precision = &Fp32Only;
  d.make = []() -> std::unique_ptr<Backend> { return std::make_unique<B>(); };
  return d;
}

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_DESCRIBE_BACKEND_H_
