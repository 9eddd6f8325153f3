#ifndef TVLAB_FRAMEWORK_TRAIN_TRAIN_LOG_ROW_H_
#define TVLAB_FRAMEWORK_TRAIN_TRAIN_LOG_ROW_H_

// One row of a run's train_log.csv, produced by the training loop
// (train_loop.h) and written by RunDirectory (run_directory.h).

#include <cstdint>
#include <vector>

#include "framework/train/auxiliary_tally.h"
#include "framework/train/probes.h"

namespace tvlab {

struct TrainLogRow {
  int64_t step = 0;
  double loss = 0;  // mean over the step's micro-batches
  float lr = 0;
  double grad_norm = 0;  // before clipping
  double tokens_per_sec = 0;
  double elapsed_sec = 0;
  // Filled on the steps with a periodic evaluation (train.eval_every).
  bool has_eval = false;
  double eval_loss = 0;
  double eval_token_accuracy = 0;
  // The model's declared auxiliary outputs, in declaration order, each the
  // mean of its values since the previous row (NaN: none emitted).
  std::vector<AuxiliaryMean> auxiliary;
  // train.probe_every's values on a probed step (probes.h), else empty.
  std::vector<ProbeValue> probes;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_TRAIN_LOG_ROW_H_
