#ifndef TVLAB_FRAMEWORK_REPORT_RUN_DIR_H_
#define TVLAB_FRAMEWORK_REPORT_RUN_DIR_H_

// What a run directory holds, as far as grids and reports care. The trainer
// writes metrics.json last and atomically, so a metrics.json that parses
// means the run finished; one that exists but does not parse (an old
// trainer's partial write, a damaged disk) makes the run failed, so resume,
// the grid's skip and --retry_failed all see it as unfinished. The grid
// runner writes failed.txt when the run process failed.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/train/metrics.pb.h"

namespace tvlab {

inline constexpr char kMetricsFile[] = "metrics.json";
inline constexpr char kTrainLogFile[] = "train_log.csv";
inline constexpr char kFailedFile[] = "failed.txt";

enum class RunState { kFinished, kFailed, kNotRun };
const char* RunStateName(RunState state);  // "finished", "failed", "not run"

// kFinished: metrics.json parses; kFailed: failed.txt exists, or
// metrics.json exists but does not parse; kNotRun otherwise.
RunState ReadRunState(const std::string& run_dir);

// metrics.json parsed; unknown fields (from a newer trainer) are ignored.
absl::StatusOr<RunMetrics> ReadMetrics(const std::string& run_dir);
// The error the grid runner recorded, or why metrics.json is unreadable
// ("" if neither).
std::string ReadFailure(const std::string& run_dir);
// (step, loss) from train_log.csv; empty if the file is missing.
std::vector<std::pair<double, double>> ReadLossCurve(const std::string& run_dir);
// (step, value) of any train_log.csv column, rows with an empty or
// non-numeric cell left out: ReadLogCurve(dir, "eval_loss") is the
// evaluation curve (rows of train.eval_every). Empty without the file or
// the column.
std::vector<std::pair<double, double>> ReadLogCurve(const std::string& run_dir, const std::string& column);

// Numeric fields of RunMetrics by name: token_accuracy, eval_loss, ...
std::vector<std::string> MetricNames();
// The metrics measured per evaluation context (RunMetrics.context_evals),
// named METRIC@LENGTH, e.g. perplexity@1024, by CheckMetricName and
// MetricValue.
inline constexpr const char* kContextMetrics[] = {"eval_loss", "perplexity", "bits_per_byte"};
// NotFound listing MetricNames() when `name` is not one of them (nor a
// kContextMetrics entry at a positive length, METRIC@LENGTH).
absl::Status CheckMetricName(const std::string& name);
// The value of metric `name`. NotFound listing MetricNames() for an unknown
// name, and NotFound saying so for a metric the run did not record because
// it does not apply to its task (e.g. bleu on sort_digits).
absl::StatusOr<double> MetricValue(const RunMetrics& metrics, const std::string& name);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_RUN_DIR_H_
