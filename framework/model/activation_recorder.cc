#include "framework/model/activation_recorder.h"

#include <cmath>

namespace tvlab {
namespace {
thread_local ActivationRecorder* current = nullptr;
}  // namespace

ActivationRecorder::ActivationRecorder() : enclosing_(current) { current = this; }
ActivationRecorder::~ActivationRecorder() { current = enclosing_; }

ActivationRecorder* ActivationRecorder::Current() { return current; }

void ActivationRecorder::Record(const std::string& name, const Tensor& value) {
  const std::vector<float> values = value.ToVector();  // copied to the host
  double square = 0;
  for (float x : values) square += static_cast<double>(x) * x;
  const double rms = values.empty() ? 0.0 : std::sqrt(square / static_cast<double>(values.size()));
  for (auto& [n, r] : rms_)
    if (n == name) {
      r = rms;
      return;
    }
  rms_.emplace_back(name, rms);
}

}  // namespace tvlab
