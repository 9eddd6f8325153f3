#ifndef TVLAB_FRAMEWORK_AUTOGRAD_GRADCHECK_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_GRADCHECK_H_

// Finite-difference gradient check, used by the tests of every op and by the
// plugin conformance suites.

#include <functional>
#include <string>
#include <vector>

#include "framework/autograd/var.h"

namespace tvlab {

struct GradCheckOptions {
  float epsilon = 1e-2f;  // central-difference step (float32 math)
  float atol = 2e-3f;
  float rtol = 2e-2f;
  // Checks at most this many elements per input (evenly spaced); 0 = all.
  int max_elements_per_input = 64;
};

struct GradCheckResult {
  bool ok = true;
  std::string message;  // first mismatch, for test failure output
  float max_abs_error = 0.0f;
};

// `f` maps the inputs to a scalar Var. Each input must require grad. Compares
// the autograd gradient of f with (f(x + e) - f(x - e)) / 2e per element.
GradCheckResult GradCheck(const std::function<Var(const std::vector<Var>&)>& f,
                          const std::vector<Var>& inputs, const GradCheckOptions& options = {});

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_GRADCHECK_H_
