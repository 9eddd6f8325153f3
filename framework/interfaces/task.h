#ifndef TVLAB_FRAMEWORK_INTERFACES_TASK_H_
#define TVLAB_FRAMEWORK_INTERFACES_TASK_H_

// Task: a plugin kind like the others. A task supplies batches of token ids
// and targets for training and held-out evaluation. The core interface is
// small; what a kind of task adds lives in its kind's interface, and the
// kind decides which model families fit and how evaluation scores it:
//
//   TaggingTask         one target per input token        encoder-only
//   ClassificationTask  one label per sequence            encoder-only, pooled
//   SequencePairTask    source -> target, generated       decoder-only or
//                                                          encoder-decoder
//   LanguageModelTask   next token of a text stream       decoder-only
//
// A task class derives from one of the four, provides
//
//   static absl::StatusOr<std::unique_ptr<Task>> Create(const Options&, const TaskArgs&);
//   static absl::Status Validate(const Options&, const TaskArgs&);  // optional, no file IO
//
// (Create may read files and fails with a Status naming the file and line),
// and registers with one line:
//
//   TVLAB_REGISTER_TASK("sort_digits", SortDigits, SortDigitsOptions);
//
// Its options are a typed message carried in the spec's task.options Any
// (see plugins/task/*/ and docs/writing-a-plugin.md).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/core/registry.h"
#include "framework/schema/experiment.pb.h"
#include "google/protobuf/message.h"

namespace tvlab {

// Row-major token ids. Targets equal to kIgnoreTarget count in neither the
// loss nor the metrics.
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

enum class TaskKind {
  kTagging,         // one target per input token (encoder-only)
  kClassification,  // one label per sequence (encoder-only with pooling)
  kSequencePair,    // source -> target (decoder-only or encoder-decoder)
  kLanguageModel,   // next token of a stream (decoder-only)
};

// What every task's Validate and Create see besides its options.
struct TaskArgs {
  // Sequence-pair tasks pack rows differently per family.
  ModelSpec::Family family = ModelSpec::FAMILY_UNSPECIFIED;
  // eval.context_length: evaluation windows of this many tokens instead of
  // the training length (0 = the same). Only tasks whose eval_length()
  // follows it support it; validation refuses it for the others.
  int64_t eval_context_length = 0;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual TaskKind kind() const = 0;
  virtual int64_t vocab_size() const = 0;
  // Longest sequence a model position sees (sizes position tables).
  virtual int64_t max_length() const = 0;
  // Longest evaluation sequence: max_length() unless the task evaluates at
  // TaskArgs::eval_context_length (text_lm).
  virtual int64_t eval_length() const { return max_length(); }
  // A fresh training batch; a pure function of (seed, step).
  virtual Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const = 0;
  // Held-out examples [first, first + count), from the eval seed.
  virtual Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const = 0;
  // How many held-out examples exist given the spec's request (file-backed
  // tasks have a finite held-out split).
  virtual int64_t NumEvalExamples(int64_t requested) const { return requested; }
};

class TaggingTask : public Task {
 public:
  TaskKind kind() const final { return TaskKind::kTagging; }
};

class ClassificationTask : public Task {
 public:
  TaskKind kind() const final { return TaskKind::kClassification; }
  // Outputs of the pooled head.
  virtual int64_t num_classes() const = 0;
};

// Tasks whose outputs are generated text: tokens <-> text for prompts and
// printing (content tokens only, no specials).
class GenerativeTask : public Task {
 public:
  virtual std::vector<int32_t> Tokenize(const std::string& text) const = 0;
  virtual std::string Detokenize(const std::vector<int32_t>& tokens) const = 0;
  // The serialized tokenizer model (SentencePiece) a run directory keeps as
  // tokenizer.model, so generation and later evaluation use the very same
  // tokenizer; "" when there is none to keep (bytes, digits).
  virtual std::string TokenizerModel() const { return ""; }
};

// One source -> target pair in content tokens (no BOS/SEP/EOS).
struct Example {
  std::vector<int32_t> source;
  std::vector<int32_t> target;
};

// Special token ids of sequence-pair tasks.
constexpr int32_t kPad = 0, kBos = 1, kEos = 2, kSep = 3;

class SequencePairTask : public GenerativeTask {
 public:
  TaskKind kind() const final { return TaskKind::kSequencePair; }
  // Held-out example `index`, for generation.
  virtual Example EvalExample(uint64_t eval_seed, int64_t index) const = 0;
  // Whether corpus BLEU is meaningful for the outputs.
  virtual bool ScoredWithBleu() const { return false; }
};

class LanguageModelTask : public GenerativeTask {
 public:
  TaskKind kind() const final { return TaskKind::kLanguageModel; }
  // Perplexity of a unigram model of the training split on the held-out
  // split: the baseline to beat.
  virtual double UnigramPerplexity() const = 0;
  // The bytes of text the targets of the first `examples` evaluation
  // sequences stand for (the number of target tokens for a byte-level
  // model), so that perplexity per byte compares byte-level and subword runs.
  virtual double EvalTargetBytes(int64_t examples) const = 0;
};

// Outputs of a model's head for `task`: the classes of a classifier, else
// the vocabulary.
int64_t HeadOutputs(const Task& task);

// The model families a task kind fits, and their names for messages.
bool TaskFitsFamily(TaskKind kind, ModelSpec::Family family);
std::string FamiliesFor(TaskKind kind);
std::string TaskKindName(TaskKind kind);

struct TaskEntry {
  TaskKind kind = TaskKind::kTagging;
  // The options type's default instance (also its descriptor).
  const google::protobuf::Message* default_options = nullptr;
  // Checks the options alone (no file IO); messages name the field.
  std::function<absl::Status(const google::protobuf::Message&, const TaskArgs&)> validate;
  // Builds the task, reading its files; errors name the file and line.
  std::function<absl::StatusOr<std::unique_ptr<Task>>(const google::protobuf::Message&,
                                                      const TaskArgs&)>
      create;
};

Registry<TaskEntry>& TaskRegistry();

namespace internal {
template <typename T>
constexpr TaskKind KindOfTaskClass() {
  static_assert(std::is_base_of_v<Task, T>, "a task derives from one of the kind interfaces");
  if constexpr (std::is_base_of_v<TaggingTask, T>) return TaskKind::kTagging;
  else if constexpr (std::is_base_of_v<ClassificationTask, T>) return TaskKind::kClassification;
  else if constexpr (std::is_base_of_v<SequencePairTask, T>) return TaskKind::kSequencePair;
  else return TaskKind::kLanguageModel;
}
template <typename P, typename O, typename = void>
struct HasTaskValidate : std::false_type {};
template <typename P, typename O>
struct HasTaskValidate<P, O,
                       std::void_t<decltype(P::Validate(std::declval<const O&>(),
                                                        std::declval<const TaskArgs&>()))>>
    : std::true_type {};
}  // namespace internal

template <typename Plugin, typename Options>
TaskEntry MakeTaskEntry() {
  static_assert(std::is_base_of_v<SequencePairTask, Plugin> ||
                    std::is_base_of_v<LanguageModelTask, Plugin> ||
                    std::is_base_of_v<TaggingTask, Plugin> ||
                    std::is_base_of_v<ClassificationTask, Plugin>,
                "a task class derives from TaggingTask, ClassificationTask, SequencePairTask "
                "or LanguageModelTask");
  TaskEntry entry;
  entry.kind = internal::KindOfTaskClass<Plugin>();
  entry.default_options = &Options::default_instance();
  entry.validate = [](const google::protobuf::Message& m, const TaskArgs& a) -> absl::Status {
    if constexpr (internal::HasTaskValidate<Plugin, Options>::value) {
      return Plugin::Validate(static_cast<const Options&>(m), a);
    } else {
      return absl::OkStatus();
    }
  };
  entry.create = [](const google::protobuf::Message& m, const TaskArgs& a) {
    return Plugin::Create(static_cast<const Options&>(m), a);
  };
  return entry;
}

}  // namespace tvlab

#define TVLAB_TASK_CONCAT_INNER(a, b) a##b
#define TVLAB_TASK_CONCAT(a, b) TVLAB_TASK_CONCAT_INNER(a, b)
// TVLAB_REGISTER_TASK("sort_digits", SortDigits, SortDigitsOptions);
#define TVLAB_REGISTER_TASK(name, Class, Options)                   \
  static const bool TVLAB_TASK_CONCAT(tvlab_task_, __COUNTER__) =   \
      ::tvlab::TaskRegistry().Register(name, ::tvlab::MakeTaskEntry<Class, Options>())

#endif  // TVLAB_FRAMEWORK_INTERFACES_TASK_H_
