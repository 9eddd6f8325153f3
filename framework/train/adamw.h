#ifndef TVLAB_FRAMEWORK_TRAIN_ADAMW_H_
#define TVLAB_FRAMEWORK_TRAIN_ADAMW_H_

// AdamW (Loshchilov & Hutter 2019) with torch.optim.AdamW's semantics:
// decoupled weight decay p -= lr * wd * p, bias-corrected moments. Biases and
// norm scales (rank < 2) and embedding tables can be excluded from decay
// (AdamWSpec.decay_biases_and_norms / decay_embeddings).

#include <string>
#include <utility>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

class AdamW {
 public:
  AdamW(std::vector<std::pair<std::string, Var>> params, const AdamWSpec& spec);
  // One update from the parameters' current gradients. A parameter whose
  // gradient is undefined is skipped (as PyTorch skips grad=None).
  void Step(float lr);
  int64_t steps_taken() const { return step_; }
  void set_steps_taken(int64_t steps) { step_ = steps; }
  // The moments as named Vars sharing storage ("<param>.exp_avg",
  // "<param>.exp_avg_sq"), for checkpoints.
  std::vector<std::pair<std::string, Var>> StateTensors() const;

 private:
  struct Slot {
    std::string name;
    Var param;
    Tensor m, v;
    bool decay;  // weight decay applies to this parameter
  };
  std::vector<Slot> slots_;
  AdamWSpec spec_;
  int64_t step_ = 0;
};

// Whether AdamW decays the parameter `name` of rank `rank` under `spec`.
bool DecaysWeight(const AdamWSpec& spec, const std::string& name, int64_t rank);

// Multiplies every gradient by min(1, max_norm / norm); returns the norm
// before clipping.
double ClipGradNorm(const std::vector<std::pair<std::string, Var>>& params, double max_norm);

// Sets every gradient to undefined (zero).
void ZeroGrads(const std::vector<std::pair<std::string, Var>>& params);
// sqrt(sum of squared gradients) over all parameters.
double GlobalGradNorm(const std::vector<std::pair<std::string, Var>>& params);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_ADAMW_H_
