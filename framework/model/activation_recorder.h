#ifndef TVLAB_FRAMEWORK_MODEL_ACTIVATION_RECORDER_H_
#define TVLAB_FRAMEWORK_MODEL_ACTIVATION_RECORDER_H_

// Records the size of each block's output during the forwards run in its
// scope on this thread: the root-mean-square of the residual stream after
// every block of every stack ("decoder.layers.0", ...) and of the stack's
// input ("decoder.input"). The µP coordinate check reads it
// (experiments/coord_check/). Outside a scope nothing is recorded and a
// forward is exactly what it is without this header.
//
// Thread-safety: one recorder per thread at a time (a thread-local scope).

#include <string>
#include <utility>
#include <vector>

#include "framework/tensor/tensor.h"

namespace tvlab {

class ActivationRecorder {
 public:
  ActivationRecorder();   // installs itself as this thread's recorder
  ~ActivationRecorder();  // uninstalls (restoring an enclosing one)
  ActivationRecorder(const ActivationRecorder&) = delete;
  ActivationRecorder& operator=(const ActivationRecorder&) = delete;

  // This thread's recorder, or null outside any scope.
  static ActivationRecorder* Current();
  // Records sqrt(mean(value^2)) under `name` (a later record of the same
  // name replaces it), reduced on the value's device (one double read back).
  void Record(const std::string& name, const Tensor& value);
  // (name, rms) in the order first recorded.
  const std::vector<std::pair<std::string, double>>& rms() const { return rms_; }

 private:
  ActivationRecorder* enclosing_;
  std::vector<std::pair<std::string, double>> rms_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_ACTIVATION_RECORDER_H_
