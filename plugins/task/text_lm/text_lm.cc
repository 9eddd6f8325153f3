// text_lm (language model): a causal language model on any text file.
// Tokens are bytes (vocabulary 256) by default, or SentencePiece pieces
// (options.tokenizer, framework/data/tokenizer.h: a .model file, or one
// trained from the training split when the task is built). The last
// heldout_fraction of the file (in bytes) is the evaluation split; each split
// is tokenized on its own. Training windows of context_length + 1 tokens
// start at offsets drawn per (seed, step) inside the training split;
// evaluation walks the held-out split in consecutive windows. The spans are
// disjoint, and since text repeats itself (a licence quotes its own
// sentences), a training window whose input tokens equal an evaluation
// window's is redrawn. The file is read once, when the task is created; it
// must be a regular file of at most 64 MiB (ReadTextFile refuses a device,
// a directory or a larger file by name).
// EvaluatedAt(length) (eval.context_length, eval.context_lengths) is the
// task evaluated on held-out windows of that many tokens instead ("train
// short, test long"), sharing the tokens; training, and the held-out chunks
// training windows are compared with, do not change. EvaluatedOnSameTargets
// (eval.context_targets) evaluates windows of one length ending where those
// of a longer one end, scoring only their last targets (EvalWindows).
//
// Example config: plugins/task/text_lm/example.pbtxt

#include <cmath>
#include <cstring>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "framework/core/rng.h"
#include "framework/data/heldout_split.h"
#include "framework/data/text_file.h"
#include "framework/data/tokenizer.h"
#include "framework/interfaces/task.h"
#include "plugins/task/text_lm/text_lm.pb.h"

namespace tvlab {
namespace {

class TextLm : public LanguageModelTask {
 public:
  static absl::Status Validate(const TextLmOptions& o, const TaskArgs&) {
    if (o.path().empty())
      return absl::InvalidArgumentError("task.options.path is required: the text file to model");
    if (o.context_length() < 2)
      return absl::InvalidArgumentError(
          absl::StrCat("task.options.context_length must be >= 2 (got ", o.context_length(), ")"));
    if (!(o.heldout_fraction() > 0 && o.heldout_fraction() < 1))
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.heldout_fraction must be in (0, 1) (got ", o.heldout_fraction(), ")"));
    return ValidateTokenizerOptions(o.tokenizer(), "task.options.tokenizer");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const TextLmOptions& o, const TaskArgs&) {
    auto text = ReadTextFile(o.path(), "task.options.path");
    if (!text.ok()) return text.status();
    const double heldout = text->size() * o.heldout_fraction();
    if (text->size() * (1.0 - o.heldout_fraction()) < 2.0 * (o.context_length() + 1) ||
        heldout < o.context_length() + 1)
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.path: '", o.path(), "' has ", text->size(),
          " bytes, too few for windows of ", o.context_length(),
          " bytes in both splits; use a longer file or a shorter context_length"));
    const int64_t split = static_cast<int64_t>(text->size() * (1.0 - o.heldout_fraction()));
    const std::vector<std::string> lines = absl::StrSplit(text->substr(0, split), '\n');
    auto tokenizer = MakeTokenizer(o.tokenizer(), lines, "task.options.tokenizer");
    if (!tokenizer.ok()) return tokenizer.status();
    auto task = std::make_unique<TextLm>(Split(*text, split, *std::move(tokenizer), o.context_length()),
                                         o.path(), o.context_length(),
                                         EvalWindows{o.context_length(), o.context_length(), o.context_length()});
    if (task->TooShort())
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.path: '", o.path(), "' has ", task->train_tokens(), " training and ",
          task->heldout_tokens(), " held-out tokens, too few for windows of ", o.context_length(),
          " tokens in both splits; use a longer file or a shorter context_length"));
    if (!task->HasTrainingWindow())
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.path: every training window of '", o.path(),
          "' repeats an evaluation window token for token; nothing is left to train on"));
    return std::unique_ptr<Task>(std::move(task));
  }

  // What every view of the task shares: the tokenizer and both splits'
  // tokens.
  struct Corpus {
    std::unique_ptr<Tokenizer> tokenizer;
    std::vector<int32_t> train, heldout;  // the two splits' tokens
    std::vector<int64_t> heldout_ends;    // byte offset where each held-out token ends
    // The input tokens of every held-out chunk of the training length,
    // whatever the evaluation length, so the training stream does not
    // depend on it.
    std::unordered_set<std::string> heldout_windows;
  };

  // The text split at byte `split`, each split tokenized on its own.
  static std::shared_ptr<const Corpus> Split(const std::string& text, int64_t split,
                                             std::unique_ptr<Tokenizer> tokenizer, int64_t context) {
    auto corpus = std::make_shared<Corpus>();
    corpus->tokenizer = std::move(tokenizer);
    corpus->train = corpus->tokenizer->Encode(text.substr(0, split));
    corpus->heldout = corpus->tokenizer->Encode(text.substr(split), &corpus->heldout_ends);
    const int64_t heldout = static_cast<int64_t>(corpus->heldout.size());
    for (int64_t i = 0; heldout > context && i < (heldout - 1) / context; ++i)
      corpus->heldout_windows.insert(Key(corpus->heldout, i * context, context));
    return corpus;
  }

  TextLm(std::shared_ptr<const Corpus> corpus, std::string path, int64_t context, EvalWindows eval)
      : corpus_(std::move(corpus)),
        path_(std::move(path)),
        context_(context),
        eval_(eval),
        tokenizer_(*corpus_->tokenizer),
        train_(corpus_->train),
        heldout_(corpus_->heldout),
        heldout_ends_(corpus_->heldout_ends),
        heldout_windows_(corpus_->heldout_windows) {}

  absl::StatusOr<std::shared_ptr<const Task>> EvaluatedAt(int64_t length) const override {
    return EvaluatedOnSameTargets(EvalWindows{length, length, length});
  }
  absl::StatusOr<std::shared_ptr<const Task>> EvaluatedOnSameTargets(const EvalWindows& windows) const override {
    if (absl::Status valid = CheckEvalWindows(windows); !valid.ok()) return valid;
    const int64_t length = windows.end_length;
    if (heldout_tokens() < length + 1)
      return absl::InvalidArgumentError(absl::StrCat(
          "eval.context_length: the held-out split of '", path_, "' has ", heldout_tokens(),
          " tokens, too few for one evaluation window of ", length,
          " tokens; lower eval.context_length, raise task.options.heldout_fraction or use a "
          "longer file"));
    return std::shared_ptr<const Task>(std::make_shared<TextLm>(corpus_, path_, context_, windows));
  }

  int64_t train_tokens() const { return static_cast<int64_t>(train_.size()); }
  int64_t heldout_tokens() const { return static_cast<int64_t>(heldout_.size()); }
  bool TooShort() const {
    return train_tokens() < 2 * (context_ + 1) || heldout_tokens() < context_ + 1;
  }

  // Whether some training window differs from every evaluation window.
  bool HasTrainingWindow() const {
    for (size_t offset = 0; offset + context_ < train_.size(); ++offset)
      if (heldout_windows_.count(Key(train_, offset, context_)) == 0) return true;
    return false;
  }

  int64_t vocab_size() const override { return tokenizer_.vocab_size(); }
  int64_t max_length() const override { return context_; }
  int64_t eval_length() const override { return eval_.length; }

  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    RngStream rng(seed, RngPurpose::kTrainData, step);
    const uint32_t starts = static_cast<uint32_t>(train_.size() - context_);
    std::vector<int64_t> offsets;
    for (int64_t r = 0; r < batch_size; ++r)
      for (int attempt = 0;; ++attempt) {
        if (attempt == kMaxSplitDraws) SplitDrawsExhausted("text_lm", /*heldout=*/false);
        const int64_t offset = rng.UniformInt(SplitDrawOffset(attempt) + r, starts);
        if (heldout_windows_.count(Key(train_, offset, context_)) == 0) {
          offsets.push_back(offset);
          break;
        }
      }
    return Windows(train_, offsets, context_);
  }
  Batch EvalBatch(uint64_t, int64_t first, int64_t count) const override {
    std::vector<int64_t> offsets;
    for (int64_t r = 0; r < count; ++r) offsets.push_back(eval_.Start(first + r));
    Batch b = Windows(heldout_, offsets, eval_.length);
    IgnoreUnscoredTargets(eval_, &b);
    return b;
  }
  int64_t NumEvalExamples(int64_t requested) const override {
    return std::min<int64_t>(requested, eval_.Count(heldout_tokens()));
  }
  std::vector<int32_t> Tokenize(const std::string& text) const override { return tokenizer_.Encode(text); }
  std::string Detokenize(const std::vector<int32_t>& tokens) const override {
    return tokenizer_.Decode(tokens);
  }
  std::string TokenizerModel() const override { return tokenizer_.SerializedModel(); }
  double UnigramPerplexity() const override {
    // Add-one smoothed token frequencies of the training split, scored on the
    // held-out tokens that evaluation predicts (every window's scored
    // targets, in stream order).
    std::vector<double> counts(vocab_size(), 1.0);
    for (int32_t t : train_) counts[t] += 1.0;
    const double total = static_cast<double>(train_.size()) + static_cast<double>(vocab_size());
    const int64_t windows = NumEvalExamples(1 << 30), n = windows * eval_.targets;
    double nll = 0;
    for (int64_t w = 0; w < windows; ++w)
      for (int64_t i = eval_.End(w) - eval_.targets + 1; i <= eval_.End(w); ++i)
        nll -= std::log(counts[heldout_[i]] / total);
    return std::exp(nll / std::max<int64_t>(n, 1));
  }
  // The bytes of held-out text whose tokens are the scored targets of the
  // first `examples` windows: window i scores tokens End(i)-N+1 .. End(i)
  // (N = eval_.targets; i*T+1 .. i*T+T at the evaluation length T by
  // default), which stand for the bytes between the ends of tokens End(i)-N
  // and End(i).
  double EvalTargetBytes(int64_t examples) const override {
    double bytes = 0;
    for (int64_t i = 0; i < examples; ++i)
      bytes += static_cast<double>(heldout_ends_[eval_.End(i)] - heldout_ends_[eval_.End(i) - eval_.targets]);
    return bytes;
  }

 private:
  // A window's `length` input tokens as a hashable string.
  static std::string Key(const std::vector<int32_t>& tokens, int64_t offset, int64_t length) {
    return std::string(reinterpret_cast<const char*>(&tokens[offset]), length * sizeof(int32_t));
  }

  // Windows of `length` input tokens (and their next tokens as targets).
  Batch Windows(const std::vector<int32_t>& text, const std::vector<int64_t>& offsets,
                int64_t length) const {
    Batch b;
    b.batch = static_cast<int64_t>(offsets.size());
    b.length = length;
    for (int64_t offset : offsets)
      for (int64_t t = 0; t < length; ++t) {
        b.inputs.push_back(text[offset + t]);       // (B, T)
        b.targets.push_back(text[offset + t + 1]);  // (B, T)
      }
    return b;
  }

  std::shared_ptr<const Corpus> corpus_;
  std::string path_;                // task.options.path, for messages
  int64_t context_;   // training window length
  EvalWindows eval_;  // the evaluated windows and their scored targets
  // corpus_'s parts, by name.
  const Tokenizer& tokenizer_;
  const std::vector<int32_t>& train_;
  const std::vector<int32_t>& heldout_;
  const std::vector<int64_t>& heldout_ends_;
  const std::unordered_set<std::string>& heldout_windows_;
};

TVLAB_REGISTER_TASK("text_lm", TextLm, TextLmOptions);

}  // namespace
}  // namespace tvlab
