#ifndef TVLAB_FRAMEWORK_DISTRIBUTED_GRADIENT_REDUCER_H_
#define TVLAB_FRAMEWORK_DISTRIBUTED_GRADIENT_REDUCER_H_

// Data-parallel training's two collectives per step (docs/distributed.md):
//
//   per micro-batch, after the forward pass:
//     CombineLoss(rank's mean loss over its n_r target tokens, n_r)
//       -> the global batch's mean loss  sum_r n_r L_r / N   (N = sum_r n_r)
//          and this rank's weight        w_r = n_r / N
//     the rank back-propagates w_r * L_r, so the sum of the ranks' gradients
//     is the gradient of the global mean (token-weighted, as one process
//     computing the mean over all N tokens);
//   after backward, before clipping:
//     ReduceGradients: every gradient becomes its sum over ranks (MPI_SUM
//     over one flat float buffer per bucket).
//
// With one process both are the identity (w = 1), so a one-process run is
// bit for bit what it was without a reducer. Every call is collective.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/autograd/var.h"
#include "framework/distributed/communicator.h"

namespace tvlab {

struct CombinedLoss {
  double loss = 0;    // mean over the global batch's target tokens
  double weight = 1;  // this rank's share n_r / N of those tokens
};

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // `local_loss`: this rank's mean over its `local_tokens` target tokens
  // (> 0; if any rank has none, every rank gets InvalidArgument).
  virtual absl::StatusOr<CombinedLoss> CombineLoss(double local_loss, int64_t local_tokens) = 0;
  // Sums every defined gradient over the ranks, in place. Fails if the ranks
  // hold different gradient sizes (different models).
  virtual absl::Status ReduceGradients(const std::vector<std::pair<std::string, Var>>& params) = 0;
  // Wall time spent in ReduceGradients so far, and the part of it spent
  // waiting for the other ranks to arrive (their backward still running).
  // Where training stands ("step 15"), for the hang watchdog's message
  // (Communicator::SetPhase); a reducer without a watchdog ignores it.
  virtual void SetPhase(std::string) {}
  virtual double reduce_seconds() const = 0;
  virtual double wait_seconds() const = 0;
};

// A no-op reducer for world->size() == 1, else an all-reduce one with
// buckets of `bucket_bytes` (gradients are packed into one float buffer per
// bucket; a large gradient spans buckets). `world` must outlive the reducer.
std::unique_ptr<GradientReducer> MakeGradientReducer(Communicator* world,
                                                     int64_t bucket_bytes = int64_t{4} << 20);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DISTRIBUTED_GRADIENT_REDUCER_H_
