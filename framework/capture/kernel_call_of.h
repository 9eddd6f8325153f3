#ifndef TVLAB_FRAMEWORK_CAPTURE_KERNEL_CALL_OF_H_
#define TVLAB_FRAMEWORK_CAPTURE_KERNEL_CALL_OF_H_

// The KernelCall (step_recording.h) of one kernel of kernels.def: its
// arguments by value (recorded_args.h) and the Backend member that runs
// them. The recording backend makes one per call it records; the fusion
// pass (pointwise_fusion.h) reads recorded calls' arguments with
// ArgumentsOf and makes the calls that replace them with MakeKernelCall.

#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/capture/recorded_args.h"
#include "framework/capture/step_recording.h"

namespace tvlab {
namespace capture {

// A recorded call of the kernel whose signature is `Signature`
// (kernel_signature::<Name>); `key_` is the step its random streams are
// keyed at.
template <typename Signature>
class KernelCallOf : public KernelCall {
 public:
  using Args = typename ArgsOf<Signature>::type;
  using Method = Signature Backend::*;
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
  uint64_t key() const override { return key_; }
  const Args& args() const { return args_; }

 private:
  Kernel kernel_;
  Method method_;
  Args args_;
  uint64_t key_;
};

// The arguments of `call` when it is a call of the kernel with
// `Signature`, else null.
template <typename Signature>
const typename ArgsOf<Signature>::type* ArgumentsOf(const KernelCall& call) {
  const auto* typed = dynamic_cast<const KernelCallOf<Signature>*>(&call);
  return typed == nullptr ? nullptr : &typed->args();
}

template <typename Signature>
std::shared_ptr<KernelCall> MakeKernelCall(Kernel kernel, Signature Backend::*method,
                                           typename ArgsOf<Signature>::type args, uint64_t key) {
  return std::make_shared<KernelCallOf<Signature>>(kernel, method, std::move(args), key);
}

}  // namespace capture
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CAPTURE_KERNEL_CALL_OF_H_
