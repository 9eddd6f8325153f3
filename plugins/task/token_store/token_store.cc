// token_store (language model): a decoder-only language model over a token
// store prepared by //experiments:prepare (framework/data/token_store/README.md).
// The store is opened by memory map when the task is built: start-up time and
// resident memory do not grow with its size. Each split's documents are
// packed into one stream, with an end-of-document id between them unless
// options.separator is NONE. Training reads windows of context_length + 1
// ids at multiples of context_length in the train stream, in an order that
// is a pure function of (seed, sample) (window_order.h): a permutation per
// epoch, so nothing repeats before every window was read once. Evaluation
// walks the validation stream from its start in consecutive windows: a
// fixed budget of eval.examples x the evaluation length tokens. Bits per byte
// are exact: the store records the bytes of text every id stands for (a
// separator stands for none).
//
// Example config: plugins/task/token_store/example.pbtxt

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "framework/data/token_store/token_store.h"
#include "framework/interfaces/task.h"
#include "plugins/task/token_store/packed_split.h"
#include "plugins/task/token_store/token_store.pb.h"
#include "plugins/task/token_store/window_order.h"

namespace tvlab {
namespace {

// What every view of the task shares: the mapped store, its tokenizer and
// the two streams it reads.
struct OpenedStore {
  std::unique_ptr<TokenStore> store;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<int32_t> separator;
  std::unique_ptr<PackedSplit> train, validation;
};

class TokenStoreTask : public LanguageModelTask {
 public:
  static absl::Status Validate(const TokenStoreOptions& o, const TaskArgs&) {
    if (o.path().empty())
      return absl::InvalidArgumentError(
          "task.options.path is required: a token store directory made by //experiments:prepare");
    if (o.context_length() < 2)
      return absl::InvalidArgumentError(
          absl::StrCat("task.options.context_length must be >= 2 (got ", o.context_length(), ")"));
    if (o.store_vocab_size() < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.store_vocab_size must be > 0, or unset (got ", o.store_vocab_size(), ")"));
    return absl::OkStatus();
  }

  static absl::StatusOr<std::unique_ptr<Task>> Create(const TokenStoreOptions& o, const TaskArgs&) {
    auto opened = std::make_shared<OpenedStore>();
    absl::StatusOr<std::unique_ptr<TokenStore>> store = TokenStore::Open(o.path());
    if (!store.ok()) return Prefixed(store.status());
    opened->store = *std::move(store);
    const int64_t store_vocab = opened->store->vocab_size();
    if (o.store_vocab_size() > 0 && o.store_vocab_size() != store_vocab)
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.store_vocab_size is ", o.store_vocab_size(), " but the store '", o.path(),
          "' has ", store_vocab, " ids (its tokenizer: ", opened->store->manifest().tokenizer().kind(),
          "); use a store prepared with the intended tokenizer, or fix store_vocab_size"));
    absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = opened->store->LoadTokenizer();
    if (!tokenizer.ok()) return Prefixed(tokenizer.status());
    opened->tokenizer = *std::move(tokenizer);
    if (o.separator() == TokenStoreOptions::END_OF_DOCUMENT) opened->separator = static_cast<int32_t>(store_vocab);
    opened->train = std::make_unique<PackedSplit>(opened->store->split(kTrainSplit), opened->separator);
    opened->validation = std::make_unique<PackedSplit>(opened->store->split(kValidationSplit), opened->separator);
    const int64_t window = o.context_length() + 1;
    for (const PackedSplit* split : {opened->train.get(), opened->validation.get()})
      if (split->length() < window)
        return absl::InvalidArgumentError(absl::StrCat(
            "task.options.path: the ", split->split().name(), " split of token store '", o.path(),
            "' has ", split->length(), " ids (documents and separators), too few for one window of ",
            window, "; lower task.options.context_length or prepare a larger corpus (or a larger ",
            "--validation_fraction)"));
    return std::unique_ptr<Task>(new TokenStoreTask(opened, o.path(), o.context_length(), o.context_length()));
  }

  TokenStoreTask(std::shared_ptr<const OpenedStore> opened, std::string path, int64_t context, int64_t eval_context)
      : opened_(std::move(opened)), path_(std::move(path)), context_(context), eval_context_(eval_context) {}

  absl::StatusOr<std::shared_ptr<const Task>> EvaluatedAt(int64_t length) const override {
    if (opened_->validation->length() < length + 1)
      return absl::InvalidArgumentError(absl::StrCat(
          "eval.context_length: the validation split of token store '", path_, "' has ",
          opened_->validation->length(), " ids, too few for one window of ", length,
          " tokens; lower eval.context_length or prepare with a larger --validation_fraction"));
    return std::shared_ptr<const Task>(std::make_shared<TokenStoreTask>(opened_, path_, context_, length));
  }

  int64_t vocab_size() const override {
    return opened_->store->vocab_size() + (opened_->separator ? 1 : 0);
  }
  int64_t max_length() const override { return context_; }
  int64_t eval_length() const override { return eval_context_; }

  // Windows of the train stream a run can read: starts at multiples of
  // context_length with context_length + 1 ids from there.
  int64_t TrainWindows() const { return (opened_->train->length() - 1) / context_; }

  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    const uint64_t windows = static_cast<uint64_t>(TrainWindows());
    std::vector<int64_t> offsets;
    for (int64_t r = 0; r < batch_size; ++r) {
      const uint64_t sample = static_cast<uint64_t>(step) * batch_size + r;
      offsets.push_back(static_cast<int64_t>(ShuffledIndex(seed, sample / windows, windows, sample % windows)) * context_);
    }
    return Windows(*opened_->train, offsets, context_);
  }
  Batch EvalBatch(uint64_t, int64_t first, int64_t count) const override {
    std::vector<int64_t> offsets;
    for (int64_t r = 0; r < count; ++r) offsets.push_back((first + r) * eval_context_);
    return Windows(*opened_->validation, offsets, eval_context_);
  }
  // Every window is read once per epoch (window_order.h).
  double TrainEpochs(int64_t samples) const override {
    return static_cast<double>(samples) / static_cast<double>(TrainWindows());
  }
  int64_t NumEvalExamples(int64_t requested) const override {
    return std::min<int64_t>(requested, (opened_->validation->length() - 1) / eval_context_);
  }

  std::vector<int32_t> Tokenize(const std::string& text) const override {
    return opened_->tokenizer->Encode(text);
  }
  std::string Detokenize(const std::vector<int32_t>& tokens) const override {
    std::vector<int32_t> content;  // the separator stands for no text
    for (int32_t t : tokens)
      if (!opened_->separator || t != *opened_->separator) content.push_back(t);
    return opened_->tokenizer->Decode(content);
  }
  std::string TokenizerModel() const override { return opened_->tokenizer->SerializedModel(); }

  // Add-one smoothed id frequencies of the train split (its counts file, and
  // one separator per document), scored on the targets evaluation predicts
  // over the whole validation stream.
  double UnigramPerplexity() const override {
    const TokenStoreSplitFiles& train = opened_->store->split(kTrainSplit);
    std::vector<double> counts(vocab_size(), 1.0);
    for (int64_t id = 0; id < opened_->store->vocab_size(); ++id) counts[id] += train.count(id);
    if (opened_->separator) counts[*opened_->separator] += train.num_documents();
    const double total = static_cast<double>(opened_->train->length()) + static_cast<double>(vocab_size());
    const int64_t n = NumEvalExamples(int64_t{1} << 40) * eval_context_;
    std::vector<int32_t> ids(1 << 16);  // positions 1 .. n, a chunk at a time
    double nll = 0;
    for (int64_t begin = 1; begin <= n; begin += static_cast<int64_t>(ids.size())) {
      const int64_t chunk = std::min<int64_t>(static_cast<int64_t>(ids.size()), n + 1 - begin);
      opened_->validation->Read(begin, chunk, ids.data());
      for (int64_t i = 0; i < chunk; ++i) nll -= std::log(counts[ids[i]] / total);
    }
    return std::exp(nll / std::max<int64_t>(n, 1));
  }
  // Window i predicts stream positions i*T+1 .. i*T+T (T the evaluation
  // length); the store gives each position's bytes.
  double EvalTargetBytes(int64_t examples) const override {
    double bytes = 0;
    for (int64_t p = 1; p <= examples * eval_context_; ++p) bytes += opened_->validation->BytesAt(p);
    return bytes;
  }

 private:
  static absl::Status Prefixed(const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("task.options.path: ", s.message()));
  }

  // Windows of `length` input ids at `offsets` of `stream`, and their next
  // ids as targets.
  Batch Windows(const PackedSplit& stream, const std::vector<int64_t>& offsets, int64_t length) const {
    Batch b;
    b.batch = static_cast<int64_t>(offsets.size());
    b.length = length;
    std::vector<int32_t> window(length + 1);
    for (int64_t offset : offsets) {
      stream.Read(offset, length + 1, window.data());
      for (int32_t id : window)
        if (id < 0 || id >= vocab_size()) {
          std::fprintf(stderr, "token store file '%s' holds id %d outside the vocabulary of %lld: "
                       "the store is damaged; prepare it again (the run's checkpoints are "
                       "kept; --resume continues from the last one)\n",
                       stream.split().tokens_path().c_str(), id, static_cast<long long>(vocab_size()));
          std::exit(1);  // a damaged input, not a tvlab bug: no core dump
        }
      b.inputs.insert(b.inputs.end(), window.begin(), window.end() - 1);  // (B, T)
      b.targets.insert(b.targets.end(), window.begin() + 1, window.end());  // (B, T)
    }
    return b;
  }

  std::shared_ptr<const OpenedStore> opened_;
  std::string path_;                // task.options.path, for messages
  int64_t context_, eval_context_;  // training and evaluation window lengths
};

TVLAB_REGISTER_TASK("token_store", TokenStoreTask, TokenStoreOptions);

}  // namespace
}  // namespace tvlab
