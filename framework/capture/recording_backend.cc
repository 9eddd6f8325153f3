#include "framework/capture/recording_backend.h"

#include <tuple>
#include <utility>

#include "framework/backend/backend_registry.h"
#include "framework/capture/kernel_call_of.h"

namespace tvlab {
namespace capture {

template <typename Signature>
void RecordingBackend::Record(Kernel kernel, Signature Backend::*method, typename ArgsOf<Signature>::type args) {
  RecordedOp op;
  op.kind = RecordedOp::Kind::kKernel;
  op.call = MakeKernelCall<Signature>(kernel, method, std::move(args), out_->step);
  out_->ops.push_back(std::move(op));
}

// Each kernel: record it (outermost calls only), then run it on the inner
// backend with the recording depth raised.
#define TVLAB_KERNEL(name, kind, parameters, arguments)                                               \
  void RecordingBackend::name parameters {                                                            \
    using Args = ArgsOf<kernel_signature::name>::type;                                                \
    if (*depth_ == 0) Record<kernel_signature::name>(Kernel::k##name, &Backend::name, Args arguments); \
    ++*depth_;                                                                                        \
    inner_.name arguments;                                                                            \
    --*depth_;                                                                                        \
  }
#include "framework/backend/kernels.def"

void RecordingMemory::CopyToHost(const void* src, void* host_dst, size_t bytes) {
  if (*depth_ == 0) ++out_->readbacks;
  inner_.CopyToHost(src, host_dst, bytes);
}

void RecordingMemory::CopyFromHost(const void* host_src, void* dst, size_t bytes) {
  if (*depth_ == 0) {
    RecordedOp op;
    op.kind = RecordedOp::Kind::kUpload;
    op.src = host_src, op.dst = dst, op.bytes = bytes;
    op.snapshot.assign(static_cast<const char*>(host_src), bytes);
    out_->ops.push_back(std::move(op));
  }
  ++*depth_;
  inner_.CopyFromHost(host_src, dst, bytes);
  --*depth_;
}

void RecordingMemory::CopyOnDevice(const void* src, void* dst, size_t bytes) {
  if (*depth_ == 0) {
    RecordedOp op;
    op.kind = RecordedOp::Kind::kCopy;
    op.src = src, op.dst = dst, op.bytes = bytes;
    out_->ops.push_back(std::move(op));
  }
  ++*depth_;
  inner_.CopyOnDevice(src, dst, bytes);
  --*depth_;
}

void RecordingMemory::Fill(float* dst, int64_t n, float value) {
  if (*depth_ == 0) {
    RecordedOp op;
    op.kind = RecordedOp::Kind::kFill;
    op.fill_dst = dst, op.fill_n = n, op.fill_value = value;
    out_->ops.push_back(std::move(op));
  }
  ++*depth_;
  inner_.Fill(dst, n, value);
  --*depth_;
}

RecordingScope::RecordingScope(StepRecording* out, std::shared_ptr<BufferPool> pool)
    : device_(CurrentBackend().device()),
      backend_(std::make_unique<RecordingBackend>(CurrentBackend(), out, &depth_)),
      memory_(std::make_unique<RecordingMemory>(AllocatorFor(device_).memory(), out, &depth_)),
      pool_(pool),
      pool_scope_(std::move(pool)) {
  SetBackendInterposer(backend_.get());
  SetMemoryObserver(device_, memory_.get());
  pool_->set_listener([out](const void* block, bool taken) {
    out->pool_events.push_back(PoolEvent{block, taken, out->ops.size(), false});
  });
}

RecordingScope::~RecordingScope() {
  SetBackendInterposer(nullptr);
  SetMemoryObserver(device_, nullptr);
  pool_->set_listener(nullptr);
}

}  // namespace capture
}  // namespace tvlab
