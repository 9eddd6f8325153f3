#include "framework/capture/recording_backend.h"

#include <tuple>
#include <utility>

#include "framework/backend/backend_registry.h"
#include "framework/capture/recorded_args.h"

namespace tvlab {
namespace capture {
namespace {

// A recorded call of one kernel: `Method` is &Backend::<kernel>, `Args` its
// parameters by value; `key_` the step its random streams are keyed at.
template <typename Args, typename Method>
class KernelCallOf : public KernelCall {
 public:
  KernelCallOf(Kernel kernel, Method method, Args args, uint64_t key)
      : kernel_(kernel), method_(method), args_(std::move(args)), key_(key) {}
  Kernel kernel() const override { return kernel_; }
  void Run(Backend& backend, uint64_t step) override {
    if (step != key_) {
      Rekey(args_, key_, step);
      key_ = step;
    }
    std::apply([&](auto&... x) { (backend.*method_)(x...); }, args_);
  }
  bool Agrees(const KernelCall& other, uint64_t step) const override {
    const auto* o = dynamic_cast<const KernelCallOf*>(&other);
    if (o == nullptr) return false;
    Args moved = args_;
    Rekey(moved, key_, step);
    return Same(moved, o->args_);
  }
  void Pointers(std::vector<const void*>* out) const override { capture::Pointers(args_, out); }

 private:
  Kernel kernel_;
  Method method_;
  Args args_;
  uint64_t key_;
};

}  // namespace

template <typename Args, typename Method>
void RecordingBackend::Record(Kernel kernel, Method method, Args args) {
  RecordedOp op;
  op.kind = RecordedOp::Kind::kKernel;
  op.call = std::make_shared<KernelCallOf<Args, Method>>(kernel, method, std::move(args), out_->step);
  out_->ops.push_back(std::move(op));
}

// Each kernel: record it (outermost calls only), then run it on the inner
// backend with the recording depth raised.
#define TVLAB_KERNEL(name, kind, parameters, arguments)                                               \
  void RecordingBackend::name parameters {                                                            \
    using Args = ArgsOf<kernel_signature::name>::type;                                                \
    if (*depth_ == 0) Record(Kernel::k##name, &Backend::name, Args arguments);                        \
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
      pool_scope_(std::move(pool)) {
  SetBackendInterposer(backend_.get());
  SetMemoryObserver(device_, memory_.get());
}

RecordingScope::~RecordingScope() {
  SetBackendInterposer(nullptr);
  SetMemoryObserver(device_, nullptr);
}

}  // namespace capture
}  // namespace tvlab
