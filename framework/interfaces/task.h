#ifndef TVLAB_FRAMEWORK_INTERFACES_TASK_H_
#define TVLAB_FRAMEWORK_INTERFACES_TASK_H_

// Task: a plugin kind like the others. A task supplies batches of token ids
// and targets for training and held-out evaluation. The core interface is
// small; what a kind of task adds lives in its kind's interface, and the
// kind's row in the table of task kinds (TaskKindRows()) decides which model
// families fit and how evaluation scores it:
//
//   TaggingTask         one target per input token        encoder-only
//   ClassificationTask  one label per sequence            encoder-only, pooled
//   SequencePairTask    source -> target, generated       decoder-only or
//                                                          encoder-decoder
//   LanguageModelTask   next token of a text stream       decoder-only
//   CausalTaggingTask   targets at chosen positions of a   decoder-only
//                       causal sequence (recall tasks)
//
// A new kind is an interface class deriving from Task with a `kKind`, and
// one row of the table (task.cc).
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
  // Packed rows (token_store's document_mask): the document of each input
  // position, (B, T); a query attends only to keys of its own document (a
  // maximal run of equal ids: AttentionMask's documents). Empty = one
  // document per row. Decoder-only and encoder-only models honour it.
  std::vector<int32_t> documents;
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
  kCausalTagging,   // targets at chosen positions, read causally (decoder-only)
};

// How a kind is evaluated beyond the teacher-forced loss and token and
// sequence accuracies every task gets (framework/train/evaluate.h computes
// each): the bits of TaskKindRow::evaluations.
enum TaskEvaluation : uint32_t {
  kEvaluateAccuracy = 1u << 0,    // accuracy: the share of sequences labelled right
  kEvaluatePerplexity = 1u << 1,  // perplexity per token and per byte, bits per byte,
                                  // the unigram baseline (a LanguageModelTask)
  kEvaluateGeneration = 1u << 2,  // decoded outputs: exact match, BLEU where the task
                                  // asks (a SequencePairTask); eval.decode_examples
};

// Which held-out windows a language-model task evaluates, and which of
// their targets count: the stream is cut into windows of `end_length`
// tokens (window i's targets are stream positions i*E+1 .. i*E+E, E =
// end_length); the evaluated window i is the `length` input tokens ending
// where that window ends, and only its last `targets` targets are scored
// (the others kIgnoreTarget). EvaluatedAt(L) is {L, L, L}; eval.context_targets
// N over eval.context_lengths is {L, longest entry, N} for each entry L, so
// every length scores the same N tokens of the same windows.
// REQUIRES: 1 <= targets <= length <= end_length.
struct EvalWindows {
  int64_t length = 0;      // T: input tokens per window
  int64_t end_length = 0;  // E: windows end at the ends of the windows of E tokens
  int64_t targets = 0;     // N: scored targets at the end of each window
  // Stream position of window i's first input token.
  int64_t Start(int64_t i) const { return (i + 1) * end_length - length; }
  // Stream position of window i's last target; its scored targets are
  // positions End(i) - targets + 1 .. End(i).
  int64_t End(int64_t i) const { return (i + 1) * end_length; }
  // Windows a stream of `tokens` tokens holds (every target inside it).
  int64_t Count(int64_t tokens) const { return tokens > 0 ? (tokens - 1) / end_length : 0; }
};
// InvalidArgument naming eval.context_targets unless 1 <= targets <= length
// <= end_length.
absl::Status CheckEvalWindows(const EvalWindows& windows);
// Sets the targets before the last `windows.targets` of every row of `batch`
// ((B, T) targets, T = windows.length) to kIgnoreTarget.
void IgnoreUnscoredTargets(const EvalWindows& windows, Batch* batch);

// Everything the framework decides by a task's kind: one row per kind.
struct TaskKindRow {
  TaskKind kind;
  std::string name;                         // in messages: "sequence pair"
  std::vector<ModelSpec::Family> families;  // the model families it fits
  bool labels_sequences = false;            // one output per sequence: needs model.pooling
  uint32_t evaluations = 0;                 // TaskEvaluation bits
};

// The table, one row per TaskKind.
const std::vector<TaskKindRow>& TaskKindRows();
// The row of `kind`.
const TaskKindRow& TaskKindRowOf(TaskKind kind);

// What every task's Validate and Create see besides its options.
struct TaskArgs {
  // Sequence-pair tasks pack rows differently per family.
  ModelSpec::Family family = ModelSpec::FAMILY_UNSPECIFIED;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual TaskKind kind() const = 0;
  virtual int64_t vocab_size() const = 0;
  // Outputs of a model's head for this task: the vocabulary, or the classes
  // of a classifier.
  virtual int64_t head_outputs() const { return vocab_size(); }
  // Longest sequence a model position sees (sizes position tables).
  virtual int64_t max_length() const = 0;
  // Longest evaluation sequence: max_length() unless this is a task
  // EvaluatedAt another length.
  virtual int64_t eval_length() const { return max_length(); }
  // "Train short, test long": this task evaluated on held-out windows of
  // `length` tokens instead (eval.context_length, eval.context_lengths),
  // sharing this task's data (nothing is read or tokenized again); training
  // batches are unchanged. Null for a task that evaluates at its own length
  // only (the default; validation refuses another length for it). Fails when
  // the held-out data holds no window of `length` tokens, with a message
  // about eval.context_length. Views may be taken of views.
  virtual absl::StatusOr<std::shared_ptr<const Task>> EvaluatedAt(int64_t /*length*/) const {
    return std::shared_ptr<const Task>();
  }
  // The same targets at several contexts (eval.context_targets): this task
  // evaluated on `windows` (EvalWindows above): NumEvalExamples counts the
  // windows of windows.end_length tokens, EvalBatch gives windows of
  // windows.length tokens ending at their ends with only the last
  // windows.targets targets scored, EvalTargetBytes and UnigramPerplexity
  // are over those scored targets. Shares the data as EvaluatedAt does.
  // Null for a task that cannot (the default; validation refuses
  // eval.context_targets for it); fails when `windows` breaks
  // CheckEvalWindows or the held-out data holds no window of end_length.
  virtual absl::StatusOr<std::shared_ptr<const Task>> EvaluatedOnSameTargets(const EvalWindows& /*windows*/) const {
    return std::shared_ptr<const Task>();
  }
  // A fresh training batch; a pure function of (seed, step).
  virtual Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const = 0;
  // Held-out examples [first, first + count), from the eval seed.
  virtual Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const = 0;
  // How many held-out examples exist given the spec's request (file-backed
  // tasks have a finite held-out split).
  virtual int64_t NumEvalExamples(int64_t requested) const { return requested; }
  // True when batches carry packed documents (Batch::documents).
  virtual bool packs_documents() const { return false; }
  // Passes over the training data that the first `samples` training
  // sequences from `seed` make (metrics.json's epochs), for a task whose
  // training set is finite and read in passes (token_store); negative (the
  // default) when the task generates its data or draws windows at random,
  // and epochs is absent.
  virtual double TrainEpochs(uint64_t /*seed*/, int64_t /*samples*/) const { return -1; }
  // What those sequences take from each source of a task that reads several
  // (token_store's mixtures; metrics.json's train_sources); empty (the
  // default) otherwise.
  struct TrainSourceUse {
    std::string source;    // the source's name (a store's path)
    double share = 0;      // the share of samples it is meant to get
    int64_t samples = 0;   // sequences drawn from it
    int64_t tokens = 0;    // target tokens of those sequences
    double epochs = 0;     // passes over it
  };
  virtual std::vector<TrainSourceUse> TrainSources(uint64_t /*seed*/, int64_t /*samples*/) const { return {}; }
};

class TaggingTask : public Task {
 public:
  static constexpr TaskKind kKind = TaskKind::kTagging;
  TaskKind kind() const final { return kKind; }
};

class ClassificationTask : public Task {
 public:
  static constexpr TaskKind kKind = TaskKind::kClassification;
  TaskKind kind() const final { return kKind; }
  // Outputs of the pooled head.
  virtual int64_t num_classes() const = 0;
  int64_t head_outputs() const final { return num_classes(); }
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
  static constexpr TaskKind kKind = TaskKind::kSequencePair;
  TaskKind kind() const final { return kKind; }
  // Held-out example `index`, for generation.
  virtual Example EvalExample(uint64_t eval_seed, int64_t index) const = 0;
  // Whether corpus BLEU is meaningful for the outputs.
  virtual bool ScoredWithBleu() const { return false; }
};

class LanguageModelTask : public GenerativeTask {
 public:
  static constexpr TaskKind kKind = TaskKind::kLanguageModel;
  TaskKind kind() const final { return kKind; }
  // Perplexity of a unigram model of the training split on the held-out
  // split: the baseline to beat.
  virtual double UnigramPerplexity() const = 0;
  // The bytes of text the targets of the first `examples` evaluation
  // sequences stand for (the number of target tokens for a byte-level
  // model), so that perplexity per byte compares byte-level and subword runs.
  virtual double EvalTargetBytes(int64_t examples) const = 0;
};

// A target at chosen positions of a sequence that a causal (decoder-only)
// model reads left to right, every other target kIgnoreTarget: the recall
// tasks (associative_recall, needle), where the target at a query's position
// is the answer. Scored by the loss and the token (answer) and sequence
// (every answer of a row) accuracies every task gets.
class CausalTaggingTask : public Task {
 public:
  static constexpr TaskKind kKind = TaskKind::kCausalTagging;
  TaskKind kind() const final { return kKind; }
};

// task.head_outputs().
int64_t HeadOutputs(const Task& task);

// From the kind's row: whether it fits `family`, the families it fits for
// messages ("DECODER_ONLY or ENCODER_DECODER"), and its name.
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
// Whether T derives from a kind interface (which declares kKind).
template <typename T, typename = void>
struct HasTaskKind : std::false_type {};
template <typename T>
struct HasTaskKind<T, std::void_t<decltype(T::kKind)>> : std::true_type {};
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
  static_assert(std::is_base_of_v<Task, Plugin> && internal::HasTaskKind<Plugin>::value,
                "a task class derives from a kind interface: TaggingTask, ClassificationTask, "
                "SequencePairTask, LanguageModelTask or CausalTaggingTask");
  TaskEntry entry;
  entry.kind = Plugin::kKind;
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
