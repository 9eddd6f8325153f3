#ifndef TVLAB_FRAMEWORK_CAPTURE_RECORDED_OPS_FOR_TEST_H_
#define TVLAB_FRAMEWORK_CAPTURE_RECORDED_OPS_FOR_TEST_H_

// Recorded kernel calls built by hand for the capture tests
// (pointwise_fusion_test, chain_scratch_test), keyed at step kStep.

#include <cstdint>
#include <memory>
#include <utility>

#include "framework/backend/backend.h"
#include "framework/capture/kernel_call_of.h"
#include "framework/core/rng.h"
#include "framework/tensor/tensor.h"

namespace tvlab {
namespace capture {
namespace test_ops {

constexpr uint64_t kStep = 3;

inline RecordedOp Op(std::shared_ptr<KernelCall> call) {
  RecordedOp op;
  op.kind = RecordedOp::Kind::kKernel;
  op.call = std::move(call);
  return op;
}

inline RecordedOp BinaryOp_(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  return Op(MakeKernelCall<kernel_signature::Binary>(Kernel::kBinary, &Backend::Binary,
                                                     {op, a.ptr(), a.shape(), b.ptr(), b.shape(), out.ptr(), out.shape()},
                                                     kStep));
}

// A dropout mask of stream (5, dropout, kStep) and p 0.25.
inline RecordedOp Mask(const Tensor& mask) {
  return Op(MakeKernelCall<kernel_signature::DropoutMask>(
      Kernel::kDropoutMask, &Backend::DropoutMask,
      {RngStream(5, RngPurpose::kDropout, kStep), 0.25f, mask.ptr(), mask.numel()}, kStep));
}

inline RecordedOp UnaryOp_(UnaryOp op, const Tensor& x, const Tensor& y) {
  return Op(MakeKernelCall<kernel_signature::Unary>(Kernel::kUnary, &Backend::Unary, {op, x.ptr(), y.ptr(), x.numel()},
                                                    kStep));
}

}  // namespace test_ops
}  // namespace capture
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CAPTURE_RECORDED_OPS_FOR_TEST_H_
