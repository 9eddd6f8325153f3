#include "framework/backend/simulated_device/simulated_device_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "framework/backend/describe_backend.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

// A device pointer -> the host address behind it. Null stays null (optional
// arguments); a host pointer passed to a device kernel is a bug and stops.
template <typename T>
T* Host(T* device_ptr) {
  if (device_ptr == nullptr) return nullptr;
  TVLAB_CHECK(IsSimulatedDevicePointer(device_ptr))
      << "a host pointer was passed to a simulated_device kernel; device kernels take "
         "Tensor::ptr() / DeviceInts::ptr() of tensors on the device";
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(device_ptr) & ~kSimulatedDeviceTag);
}

class SimulatedDeviceMemory : public DeviceMemory {
 public:
  Device device() const override { return Device::kSimulated; }
  void* Allocate(size_t bytes) override {
    void* host = std::aligned_alloc(64, bytes);
    if (host == nullptr) return nullptr;
    TVLAB_CHECK(!IsSimulatedDevicePointer(host)) << "host address already has bit 62 set";
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(host);
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(host) | kSimulatedDeviceTag);
  }
  void Free(void* ptr, size_t) override {
    void* host = Host(ptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      TVLAB_CHECK(live_.erase(host) == 1) << "free of a block the simulated device did not allocate";
    }
    std::free(host);
  }
  void CopyToHost(const void* src, void* dst, size_t bytes) override {
    if (bytes) std::memcpy(dst, Host(src), bytes);
  }
  void CopyFromHost(const void* src, void* dst, size_t bytes) override {
    if (bytes) std::memcpy(Host(dst), src, bytes);
  }
  void CopyOnDevice(const void* src, void* dst, size_t bytes) override {
    if (bytes) std::memmove(Host(dst), Host(src), bytes);
  }
  void Fill(float* dst, int64_t n, float value) override {
    float* h = Host(dst);
    std::fill(h, h + n, value);
  }

 private:
  // The host addresses of live blocks (which also keeps them visible to
  // LeakSanitizer: the handed-out pointers do not point at them).
  std::mutex mu_;
  std::unordered_set<void*> live_;
};

// The host image of a kernel argument: a device pointer's host address,
// the same tensors with host addresses for AdamWMany (and the steps of a
// PointwiseChain), and any other
// argument (sizes, shapes, descriptions, host vectors) unchanged.
template <typename T>
T* ToHost(T* device_ptr) {
  return Host(device_ptr);
}
std::vector<AdamWTensor> ToHost(const std::vector<AdamWTensor>& tensors) {
  std::vector<AdamWTensor> host = tensors;
  for (AdamWTensor& t : host) {
    t.param = Host(t.param);
    t.grad = Host(t.grad);
    t.m = Host(t.m);
    t.v = Host(t.v);
  }
  return host;
}
std::vector<PointwiseStep> ToHost(const std::vector<PointwiseStep>& steps) {
  std::vector<PointwiseStep> host = steps;
  for (PointwiseStep& s : host) {
    s.a = Host(s.a), s.b = Host(s.b), s.c = Host(s.c), s.out = Host(s.out);  // null stays null
  }
  return host;
}
template <typename T>
const T& ToHost(const T& value) {
  return value;
}

// Calls `kernel` with the host image of every argument.
template <typename KernelCall, typename... Args>
void OnHost(KernelCall kernel, const Args&... args) {
  kernel(ToHost(args)...);
}

const bool memory_registered = RegisterDeviceMemory(std::make_unique<SimulatedDeviceMemory>());
const bool registered = RegisterBackend(
    DescribeBackend<SimulatedDeviceBackend>("simulated_device")
        .OnDevice(Device::kSimulated, &HostIsPresent)  // host RAM behind device pointers
        .WithPrecisions(&EveryPrecision));             // the reference's GEMM

}  // namespace

#define TVLAB_KERNEL_ARGUMENTS(...) __VA_ARGS__
#define TVLAB_KERNEL(name, kind, parameters, arguments)                                   \
  void SimulatedDeviceBackend::name parameters {                                          \
    OnHost([this](const auto&... host) { ref_.name(host...); },                           \
           TVLAB_KERNEL_ARGUMENTS arguments);                                             \
  }
#include "framework/backend/kernels.def"
#undef TVLAB_KERNEL_ARGUMENTS

}  // namespace tvlab
