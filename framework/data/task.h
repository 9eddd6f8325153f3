#ifndef TVLAB_FRAMEWORK_DATA_TASK_H_
#define TVLAB_FRAMEWORK_DATA_TASK_H_

// A task supplies batches of token ids and targets. Tasks are registered by
// the name of their field in TaskSpec's `task` oneof (e.g. "sort_digits"), so
// a new task adds a field there and a file here, and touches no switch.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/core/registry.h"
#include "framework/spec/experiment.pb.h"

namespace tvlab {

// Row-major (B, T) token ids. Targets equal to kIgnoreTarget do not count in
// the loss or the metrics.
struct Batch {
  int64_t batch = 0;
  int64_t length = 0;
  std::vector<int32_t> inputs;   // (B, T)
  std::vector<int32_t> targets;  // (B, T)
  // Real tokens per row when rows are padded at the end; empty = all T.
  std::vector<int64_t> lengths;
};

constexpr int32_t kIgnoreTarget = -100;

class Task {
 public:
  virtual ~Task() = default;
  virtual int64_t vocab_size() const = 0;
  // Longest input the task produces (sizes position tables and masks).
  virtual int64_t max_length() const = 0;
  // A fresh training batch; a pure function of (seed, step).
  virtual Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const = 0;
  // Evaluation examples [first, first + count), from the eval seed.
  virtual Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const = 0;
};

struct TaskEntry {
  // Checks the task's own fields; messages name the field path.
  std::function<absl::Status(const Experiment&)> validate;
  std::function<std::unique_ptr<Task>(const Experiment&)> create;
};

Registry<TaskEntry>& TaskRegistry();

// The name of the task set in spec.task() ("" if none).
std::string TaskName(const Experiment& spec);

}  // namespace tvlab

#define TVLAB_REGISTER_TASK(name, validate_fn, create_fn)                          \
  static const bool TVLAB_TASK_CONCAT(tvlab_task_, __COUNTER__) =                  \
      ::tvlab::TaskRegistry().Register(name, ::tvlab::TaskEntry{validate_fn, create_fn})
#define TVLAB_TASK_CONCAT_INNER(a, b) a##b
#define TVLAB_TASK_CONCAT(a, b) TVLAB_TASK_CONCAT_INNER(a, b)

#endif  // TVLAB_FRAMEWORK_DATA_TASK_H_
