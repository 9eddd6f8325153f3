#ifndef TVLAB_FRAMEWORK_CAPTURE_RECORDING_BACKEND_H_
#define TVLAB_FRAMEWORK_CAPTURE_RECORDING_BACKEND_H_

// Recording a step (step_recording.h): a Backend that runs every kernel on
// the active backend and appends the call to a StepRecording, and a
// DeviceMemory that does the same for fills, copies and uploads. A
// RecordingScope installs both for the calling thread (CurrentBackend()
// and AllocatorFor(device).memory() return them) and makes a BufferPool
// the source of every new buffer, so the recorded pointers stay reserved.
// Calls a kernel makes from inside another are not recorded (replaying the
// outer call makes them again).

#include <memory>
#include <string>

#include "framework/backend/backend.h"
#include "framework/capture/recorded_args.h"
#include "framework/capture/step_recording.h"
#include "framework/tensor/device_memory.h"

namespace tvlab {
namespace capture {

class RecordingBackend : public Backend {
 public:
  RecordingBackend(Backend& inner, StepRecording* out, int* depth) : inner_(inner), out_(out), depth_(depth) {}
  std::string name() const override { return inner_.name(); }
  Device device() const override { return inner_.device(); }
  std::string device_model() const override { return inner_.device_model(); }
  // The recorded step must take the paths the eager step takes.
  bool KeepsMaskBits() const override { return inner_.KeepsMaskBits(); }
  bool PrefersTokenMajorFusedAttention(const FusedAttentionDesc& d) const override {
    return inner_.PrefersTokenMajorFusedAttention(d);
  }

#define TVLAB_KERNEL(name, kind, parameters, arguments) void name parameters override;
#include "framework/backend/kernels.def"

 private:
  template <typename Signature>
  void Record(Kernel kernel, Signature Backend::*method, typename ArgsOf<Signature>::type args);

  Backend& inner_;
  StepRecording* out_;
  int* depth_;  // > 0 inside a kernel (shared with RecordingMemory)
};

class RecordingMemory : public DeviceMemory {
 public:
  RecordingMemory(DeviceMemory& inner, StepRecording* out, int* depth) : inner_(inner), out_(out), depth_(depth) {}
  Device device() const override { return inner_.device(); }
  void* Allocate(size_t bytes) override { return inner_.Allocate(bytes); }
  void Free(void* ptr, size_t bytes) override { inner_.Free(ptr, bytes); }
  void CopyToHost(const void* src, void* host_dst, size_t bytes) override;
  void CopyFromHost(const void* host_src, void* dst, size_t bytes) override;
  void CopyOnDevice(const void* src, void* dst, size_t bytes) override;
  void Fill(float* dst, int64_t n, float value) override;

 private:
  DeviceMemory& inner_;
  StepRecording* out_;
  int* depth_;
};

// Records the calling thread's device work into `out` for a scope, with
// new buffers of the active backend's device from `pool` (whose blocks'
// takings and givings back go into out->pool_events).
class RecordingScope {
 public:
  RecordingScope(StepRecording* out, std::shared_ptr<BufferPool> pool);
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

 private:
  int depth_ = 0;
  Device device_;
  std::unique_ptr<RecordingBackend> backend_;
  std::unique_ptr<RecordingMemory> memory_;
  std::shared_ptr<BufferPool> pool_;  // its block lifetimes go into the recording
  ScopedBufferPool pool_scope_;
};

}  // namespace capture
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CAPTURE_RECORDING_BACKEND_H_
