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

// Row-major token ids. Targets equal to kIgnoreTarget do not count in the
// loss or the metrics.
struct Batch {
  int64_t batch = 0;
  int64_t length = 0;
  std::vector<int32_t> inputs;   // (B, T): encoder input, or decoder input
  std::vector<int32_t> targets;  // (B, T), or (B) for classification
  // Real tokens per row when rows are padded at the end; empty = all T.
  std::vector<int64_t> lengths;
  // Encoder-decoder only: the source side, (B, S), padded at the end.
  int64_t source_length = 0;
  std::vector<int32_t> source;
  std::vector<int64_t> source_lengths;
};

constexpr int32_t kIgnoreTarget = -100;

// What a task asks of a model, which decides the families it fits.
enum class TaskKind {
  kTagging,         // one target per input token (encoder-only)
  kClassification,  // one label per sequence (encoder-only with pooling)
  kSequencePair,    // source -> target (decoder-only or encoder-decoder)
  kLanguageModel,   // next token of a stream (decoder-only)
};

// One source -> target pair in content tokens (no BOS/SEP/EOS).
struct Example {
  std::vector<int32_t> source;
  std::vector<int32_t> target;
};

// Special token ids of sequence-pair tasks.
constexpr int32_t kPad = 0, kBos = 1, kEos = 2, kSep = 3;

class Task {
 public:
  virtual ~Task() = default;
  virtual TaskKind kind() const = 0;
  virtual int64_t vocab_size() const = 0;
  // Outputs of the head: vocab_size(), or the classes of a classifier.
  virtual int64_t num_outputs() const { return vocab_size(); }
  // Longest sequence a model position sees (sizes position tables).
  virtual int64_t max_length() const = 0;
  // A fresh training batch; a pure function of (seed, step).
  virtual Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const = 0;
  // Evaluation examples [first, first + count), from the eval seed.
  virtual Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const = 0;
  // How many evaluation examples exist given the spec's request (file-backed
  // tasks have a finite held-out split).
  virtual int64_t NumEvalExamples(int64_t requested) const { return requested; }
  // Sequence-pair tasks: evaluation example `index` for generation.
  virtual Example EvalExample(uint64_t eval_seed, int64_t index) const { return {}; }
  // Text <-> tokens, for prompts and printing (content tokens only).
  virtual std::vector<int32_t> Tokenize(const std::string& text) const { return {}; }
  virtual std::string Detokenize(const std::vector<int32_t>& tokens) const { return ""; }
  // Language models: perplexity of a unigram model of the training split on
  // the held-out split (the baseline to beat); 0 if not applicable.
  virtual double UnigramPerplexity() const { return 0; }
  // Whether BLEU is meaningful for this task's outputs.
  virtual bool ScoredWithBleu() const { return false; }
};

struct TaskEntry {
  TaskKind kind;
  // Checks the task's own fields (and files); messages name the field path.
  std::function<absl::Status(const Experiment&)> validate;
  // Requires: validate passed.
  std::function<std::unique_ptr<Task>(const Experiment&)> create;
};

// The model families a task kind fits, for validation messages.
bool TaskFitsFamily(TaskKind kind, ModelSpec::Family family);
std::string FamiliesFor(TaskKind kind);

Registry<TaskEntry>& TaskRegistry();

// The name of the task set in spec.task() ("" if none).
std::string TaskName(const Experiment& spec);

}  // namespace tvlab

#define TVLAB_REGISTER_TASK(name, kind, validate_fn, create_fn)           \
  static const bool TVLAB_TASK_CONCAT(tvlab_task_, __COUNTER__) =         \
      ::tvlab::TaskRegistry().Register(name, ::tvlab::TaskEntry{kind, validate_fn, create_fn})
#define TVLAB_TASK_CONCAT_INNER(a, b) a##b
#define TVLAB_TASK_CONCAT(a, b) TVLAB_TASK_CONCAT_INNER(a, b)

#endif  // TVLAB_FRAMEWORK_DATA_TASK_H_
