#ifndef TVLAB_FRAMEWORK_TRAIN_ADAMW_H_
#define TVLAB_FRAMEWORK_TRAIN_ADAMW_H_

// AdamW (Loshchilov & Hutter 2019) with torch.optim.AdamW's semantics:
// decoupled weight decay p -= lr * wd * p, bias-corrected moments.

#include <string>
#include <utility>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/spec/experiment.pb.h"

namespace tvlab {

class AdamW {
 public:
  AdamW(std::vector<std::pair<std::string, Var>> params, const AdamWSpec& spec);
  // One update from the parameters' current gradients. A parameter whose
  // gradient is undefined is skipped (as PyTorch skips grad=None).
  void Step(float lr);
  int64_t steps_taken() const { return step_; }

 private:
  struct Slot {
    Var param;
    Tensor m, v;
  };
  std::vector<Slot> slots_;
  AdamWSpec spec_;
  int64_t step_ = 0;
};

// Sets every gradient to undefined (zero).
void ZeroGrads(const std::vector<std::pair<std::string, Var>>& params);
// sqrt(sum of squared gradients) over all parameters.
double GlobalGradNorm(const std::vector<std::pair<std::string, Var>>& params);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_ADAMW_H_
