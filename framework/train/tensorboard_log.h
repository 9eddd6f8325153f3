#ifndef TVLAB_FRAMEWORK_TRAIN_TENSORBOARD_LOG_H_
#define TVLAB_FRAMEWORK_TRAIN_TENSORBOARD_LOG_H_

// A run's TensorBoard curves, in an events.out.tfevents.* file of its run
// directory (framework/tensorboard/event_file_writer.h), so that
// `tensorboard --logdir runs/` (or runs/GRID, whose cells are run
// directories) overlays runs. Scalars, at the step they belong to:
//   every log row          train/loss, train/learning_rate, train/grad_norm,
//                          train/tokens_per_sec
//   rows with a periodic   eval/loss, eval/token_accuracy
//   evaluation
//   every log row, per     auxiliary/<full name>: its mean over the logging
//   auxiliary output       interval (none where nothing was emitted)
//   the final evaluation   eval/<metric> for every metric of metrics.json that
//   (step train.steps)     applies to the task (EvaluationMetricNames,
//                          evaluate.h; eval_loss is eval/loss)
// A resumed run opens a new file; TensorBoard's reader drops the older
// file's points after the step the run resumed from.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/io/file_system.h"
#include "framework/tensorboard/event_file_writer.h"
#include "framework/train/metrics.pb.h"
#include "framework/train/train_log_row.h"

namespace tvlab {

class TensorBoardLog {
 public:
  // Writes through `fs` (framework/io/file_system.h), which must outlive the log.
  static absl::StatusOr<TensorBoardLog> Open(const std::string& run_dir,
                                             FileSystem* fs = DefaultFileSystem());

  absl::Status WriteRow(const TrainLogRow& row);
  absl::Status WriteFinalMetrics(int64_t step, const RunMetrics& metrics,
                                 const std::vector<std::string>& names);

 private:
  explicit TensorBoardLog(std::unique_ptr<EventFileWriter> writer) : writer_(std::move(writer)) {}
  std::unique_ptr<EventFileWriter> writer_;
};

// The (tag, value) pairs above, for tests and readers.
std::vector<std::pair<std::string, double>> RowScalars(const TrainLogRow& row);
// `names`: RunMetrics double fields (EvaluationMetricNames).
std::vector<std::pair<std::string, double>> FinalMetricScalars(const RunMetrics& metrics,
                                                               const std::vector<std::string>& names);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_TENSORBOARD_LOG_H_
