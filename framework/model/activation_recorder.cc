#include "framework/model/activation_recorder.h"

#include <cmath>

#include "framework/backend/backend.h"
#include "framework/core/check.h"
#include "framework/tensor/device_memory.h"

namespace tvlab {
namespace {
thread_local ActivationRecorder* current = nullptr;
}  // namespace

ActivationRecorder::ActivationRecorder() : enclosing_(current) { current = this; }
ActivationRecorder::~ActivationRecorder() { current = enclosing_; }

ActivationRecorder* ActivationRecorder::Current() { return current; }

void ActivationRecorder::Record(const std::string& name, const Tensor& value) {
  // Summed on the value's device into one double; 8 bytes come back.
  TVLAB_CHECK(value.is_contiguous()) << name << ": a strided activation";
  double square = 0;
  DeviceInts acc = DeviceInts::Empty(2, value.device());  // 8 bytes, used as one double
  DeviceMemory& memory = AllocatorFor(acc.device()).memory();
  memory.CopyFromHost(&square, acc.ptr(), sizeof(double));
  if (value.numel() > 0) CurrentBackend().SumSquares(value.ptr(), value.numel(), reinterpret_cast<double*>(acc.ptr()));
  memory.CopyToHost(acc.ptr(), &square, sizeof(double));
  const double rms = value.numel() == 0 ? 0.0 : std::sqrt(square / static_cast<double>(value.numel()));
  for (auto& [n, r] : rms_)
    if (n == name) {
      r = rms;
      return;
    }
  rms_.emplace_back(name, rms);
}

}  // namespace tvlab
