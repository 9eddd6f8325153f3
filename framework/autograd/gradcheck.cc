#include "framework/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "framework/core/check.h"

namespace tvlab {
namespace {
// One element of a tensor on any device, by explicit copies.
float Get(const Tensor& t, int64_t i) {
  float v;
  AllocatorFor(t.device()).memory().CopyToHost(t.ptr() + i, &v, sizeof(float));
  return v;
}
void Set(Tensor& t, int64_t i, float v) {
  AllocatorFor(t.device()).memory().CopyFromHost(&v, t.ptr() + i, sizeof(float));
}
}  // namespace

GradCheckResult GradCheck(const std::function<Var(const std::vector<Var>&)>& f,
                          const std::vector<Var>& inputs, const GradCheckOptions& options) {
  GradCheckResult result;
  for (const Var& in : inputs) {
    TVLAB_CHECK(in.requires_grad()) << "gradcheck inputs must require grad";
    const_cast<Var&>(in).ZeroGrad();
  }
  Var out = f(inputs);
  TVLAB_CHECK(out.value().numel() == 1) << "gradcheck needs a scalar function";
  Backward(out);
  std::vector<Tensor> analytic;
  for (const Var& in : inputs) {
    analytic.push_back(in.grad().defined() ? in.grad().Clone() : Tensor::Zeros(in.shape()));
  }
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor& value = const_cast<Var&>(inputs[i]).mutable_value();
    const int64_t n = value.numel();
    int64_t step = 1;
    if (options.max_elements_per_input > 0 && n > options.max_elements_per_input)
      step = n / options.max_elements_per_input;
    for (int64_t j = 0; j < n; j += step) {
      float saved = Get(value, j);
      Set(value, j, saved + options.epsilon);
      double plus = f(inputs).value().item();
      Set(value, j, saved - options.epsilon);
      double minus = f(inputs).value().item();
      Set(value, j, saved);
      float numeric = static_cast<float>((plus - minus) / (2.0 * options.epsilon));
      float got = Get(analytic[i], j);
      float err = std::fabs(got - numeric);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (err > options.atol + options.rtol * std::fabs(numeric) && result.ok) {
        std::ostringstream msg;
        msg << "input " << i << " element " << j << ": autograd " << got << " vs numeric "
            << numeric;
        result.ok = false;
        result.message = msg.str();
      }
    }
  }
  return result;
}

}  // namespace tvlab
