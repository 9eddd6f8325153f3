#ifndef TVLAB_FRAMEWORK_TRAIN_AUXILIARY_TALLY_H_
#define TVLAB_FRAMEWORK_TRAIN_AUXILIARY_TALLY_H_

// The training loop's running sums of the auxiliary outputs
// (framework/autograd/auxiliary_outputs.h) a model declares: one per
// declared loss or statistic, over the current logging interval (every
// value emitted since the last log row, all micro-batches) and over the
// whole run. A checkpoint carries the sums (TrainState.auxiliary_sums), so
// a resumed run logs the same means as an uninterrupted one.
// Under data parallelism each rank sums its own shard's values (the
// writer's, rank 0's, are logged), as the losses are per shard.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/autograd/auxiliary_outputs.h"
#include "framework/nn/module.h"
#include "framework/train/checkpoint.pb.h"

namespace tvlab {

// One declared output's means: NaN where nothing was emitted.
struct AuxiliaryMean {
  AuxiliaryDeclaration declaration;
  double value = 0;
};

class AuxiliaryTally {
 public:
  explicit AuxiliaryTally(std::vector<AuxiliaryDeclaration> declared);

  bool empty() const { return entries_.empty(); }

  // Reads every output's value (one scalar each to the host: one of the
  // training loop's explicit edges) into the sums. Returns
  // sum(coefficient * loss value) over the losses (0 without any).
  // REQUIRES: every name was declared.
  double Add(const AuxiliaryOutputs& outputs);

  // The current interval's means in declaration order; the next interval
  // starts empty.
  std::vector<AuxiliaryMean> TakeIntervalMeans();
  // The means of the last interval taken, and over the run so far.
  std::vector<AuxiliaryMean> LastIntervalMeans() const;
  std::vector<AuxiliaryMean> RunMeans() const;

  void SaveTo(TrainState* state) const;
  // A checkpoint's sums; an error when it has sums of outputs this model
  // does not declare (it was written by another spec).
  absl::Status RestoreFrom(const TrainState& state);

 private:
  struct Entry {
    AuxiliaryDeclaration declaration;
    double interval_sum = 0, run_sum = 0, last_interval_mean = 0;
    int64_t interval_count = 0, run_count = 0;
    bool has_last_interval = false;
  };
  Entry& Find(const std::string& name);
  void Accumulate(const std::string& name, double value);

  std::vector<Entry> entries_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_AUXILIARY_TALLY_H_
