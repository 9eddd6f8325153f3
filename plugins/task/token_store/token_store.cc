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
// fixed budget of eval.examples x the evaluation length tokens; with
// eval.context_targets (EvaluatedOnSameTargets, EvalWindows), windows of each
// length end where the longest length's end and score their last targets
// only. Bits per byte
// are exact: the store records the bytes of text every id stands for (a
// separator stands for none). A mixture (options.sources) draws each
// training sample from one of several stores of one tokenizer, in
// proportion to their weights (mixture_order.h, store_sources.h), and
// evaluates on the first source's validation split. With
// options.document_mask, every batch carries the document of each input
// position (Batch::documents) and a token attends only within its document.
//
// Example config: plugins/task/token_store/example.pbtxt

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "framework/data/token_store/token_store.h"
#include "framework/interfaces/task.h"
#include "plugins/task/token_store/mixture_order.h"
#include "plugins/task/token_store/packed_split.h"
#include "plugins/task/token_store/store_sources.h"
#include "plugins/task/token_store/token_store.pb.h"
#include "plugins/task/token_store/window_order.h"

namespace tvlab {
namespace {

// The most validation targets the unigram baseline is scored on.
constexpr int64_t kUnigramPositions = int64_t{1} << 20;

class TokenStoreTask : public LanguageModelTask {
 public:
  static absl::Status Validate(const TokenStoreOptions& o, const TaskArgs&) { return ValidateStoreOptions(o); }

  static absl::StatusOr<std::unique_ptr<Task>> Create(const TokenStoreOptions& o, const TaskArgs&) {
    absl::StatusOr<std::shared_ptr<OpenedStores>> opened = OpenStores(o);
    if (!opened.ok()) return opened.status();
    const EvalWindows own{o.context_length(), o.context_length(), o.context_length()};
    return std::unique_ptr<Task>(
        new TokenStoreTask(*std::move(opened), o.context_length(), own, o.document_mask()));
  }

  TokenStoreTask(std::shared_ptr<const OpenedStores> opened, int64_t context, EvalWindows eval, bool document_mask)
      : opened_(std::move(opened)), context_(context), eval_(eval), document_mask_(document_mask) {}

  absl::StatusOr<std::shared_ptr<const Task>> EvaluatedAt(int64_t length) const override {
    return EvaluatedOnSameTargets(EvalWindows{length, length, length});
  }
  absl::StatusOr<std::shared_ptr<const Task>> EvaluatedOnSameTargets(const EvalWindows& windows) const override {
    if (absl::Status valid = CheckEvalWindows(windows); !valid.ok()) return valid;
    const int64_t length = windows.end_length;
    if (validation().length() < length + 1)
      return absl::InvalidArgumentError(absl::StrCat(
          "eval.context_length: the validation split of token store '", opened_->sources[0].path, "' has ",
          validation().length(), " ids, too few for one window of ", length,
          " tokens; lower eval.context_length or prepare with a larger --validation_fraction"));
    return std::shared_ptr<const Task>(std::make_shared<TokenStoreTask>(opened_, context_, windows, document_mask_));
  }

  int64_t vocab_size() const override { return opened_->store_vocab_size + (opened_->separator ? 1 : 0); }
  int64_t max_length() const override { return context_; }
  bool packs_documents() const override { return document_mask_; }
  int64_t eval_length() const override { return eval_.length; }

  // Windows of a source's train stream a run can read: starts at multiples
  // of context_length with context_length + 1 ids from there.
  int64_t TrainWindows(const StoreSource& source) const { return (source.train->length() - 1) / context_; }

  // Sample s = step x batch_size + row goes to a source and a rank among
  // its samples (mixture_order.h; source 0 and rank s for one store); the
  // rank picks the source's window in its own order (window_order.h).
  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    std::vector<WindowAt> windows;
    for (int64_t r = 0; r < batch_size; ++r) {
      const MixtureOrder::Draw draw = opened_->order->At(seed, static_cast<uint64_t>(step) * batch_size + r);
      const StoreSource& source = opened_->sources[draw.source];
      const uint64_t n = static_cast<uint64_t>(TrainWindows(source));
      const uint64_t window = ShuffledIndex(SourceWindowSeed(seed, draw.source), draw.rank / n, n, draw.rank % n);
      windows.push_back({source.train.get(), static_cast<int64_t>(window) * context_});
    }
    return Windows(windows, context_);
  }
  Batch EvalBatch(uint64_t, int64_t first, int64_t count) const override {
    std::vector<WindowAt> windows;
    for (int64_t r = 0; r < count; ++r) windows.push_back({&validation(), eval_.Start(first + r)});
    Batch b = Windows(windows, eval_.length);
    IgnoreUnscoredTargets(eval_, &b);
    return b;
  }
  // Every window of a source is read once per pass over it: the most
  // passes any source makes (one store: samples over its windows).
  double TrainEpochs(uint64_t seed, int64_t samples) const override {
    double most = 0;
    for (const TrainSourceUse& use : Uses(seed, samples)) most = std::max(most, use.epochs);
    return most;
  }
  // Mixtures only (a single store's is its epochs).
  std::vector<TrainSourceUse> TrainSources(uint64_t seed, int64_t samples) const override {
    if (!opened_->mixture) return {};
    return Uses(seed, samples);
  }
  int64_t NumEvalExamples(int64_t requested) const override {
    return std::min<int64_t>(requested, eval_.Count(validation().length()));
  }

  std::vector<int32_t> Tokenize(const std::string& text) const override { return opened_->tokenizer->Encode(text); }
  std::string Detokenize(const std::vector<int32_t>& tokens) const override {
    std::vector<int32_t> content;  // the separator stands for no text
    for (int32_t t : tokens)
      if (!opened_->separator || t != *opened_->separator) content.push_back(t);
    return opened_->tokenizer->Decode(content);
  }
  std::string TokenizerModel() const override { return opened_->tokenizer->SerializedModel(); }

  // The sources' add-one smoothed id frequencies of their train splits
  // (counts files, and one separator per document), mixed by share, scored
  // on the targets evaluation could predict over the validation stream
  // (every window's scored targets, in stream order), at most the first
  // kUnigramPositions of them (so that its time and resident pages do not
  // grow with the store).
  double UnigramPerplexity() const override {
    const std::vector<double> probability = MixtureUnigram();
    const int64_t windows = NumEvalExamples(int64_t{1} << 40);
    const int64_t n = std::min(windows * eval_.targets, kUnigramPositions);
    std::vector<int32_t> ids(1 << 16);  // a chunk of a window's scored targets at a time
    double nll = 0;
    int64_t scored = 0;  // positions read so far
    for (int64_t w = 0; w < windows && scored < n; ++w)
      for (int64_t begin = eval_.End(w) - eval_.targets + 1; begin <= eval_.End(w) && scored < n;) {
        const int64_t chunk =
            std::min({static_cast<int64_t>(ids.size()), eval_.End(w) + 1 - begin, n - scored});
        validation().Read(begin, chunk, ids.data());
        for (int64_t i = 0; i < chunk; ++i) nll -= std::log(probability[ids[i]]);
        begin += chunk, scored += chunk;
      }
    return std::exp(nll / std::max<int64_t>(n, 1));
  }
  // Window i scores stream positions End(i)-N+1 .. End(i) (N = eval_.targets;
  // i*T+1 .. i*T+T at the evaluation length T by default); the store gives
  // each position's bytes.
  double EvalTargetBytes(int64_t examples) const override {
    double bytes = 0;
    for (int64_t i = 0; i < examples; ++i)
      for (int64_t p = eval_.End(i) - eval_.targets + 1; p <= eval_.End(i); ++p) bytes += validation().BytesAt(p);
    return bytes;
  }

 private:
  // A window's stream and first position.
  struct WindowAt {
    const PackedSplit* stream;
    int64_t offset;
  };

  // Every source's share of the first `samples` samples from `seed`.
  std::vector<TrainSourceUse> Uses(uint64_t seed, int64_t samples) const {
    const std::vector<uint64_t> taken = opened_->order->SamplesPerSource(seed, static_cast<uint64_t>(samples));
    double total_weight = 0;
    for (const StoreSource& source : opened_->sources) total_weight += source.weight;
    std::vector<TrainSourceUse> uses;
    for (size_t k = 0; k < taken.size(); ++k) {
      const StoreSource& source = opened_->sources[k];
      uses.push_back({source.path, source.weight / total_weight, static_cast<int64_t>(taken[k]),
                      static_cast<int64_t>(taken[k]) * context_,
                      static_cast<double>(taken[k]) / static_cast<double>(TrainWindows(source))});
    }
    return uses;
  }

  // The evaluated stream: the first source's validation split.
  const PackedSplit& validation() const { return *opened_->sources[0].validation; }

  std::vector<double> MixtureUnigram() const {
    double total_weight = 0;
    for (const StoreSource& source : opened_->sources) total_weight += source.weight;
    std::vector<double> probability(vocab_size(), 0.0), counts(vocab_size());
    for (const StoreSource& source : opened_->sources) {
      const TokenStoreSplitFiles& train = source.store->split(kTrainSplit);
      std::fill(counts.begin(), counts.end(), 1.0);
      for (int64_t id = 0; id < opened_->store_vocab_size; ++id) counts[id] += train.count(id);
      if (opened_->separator) counts[*opened_->separator] += train.num_documents();
      const double total = static_cast<double>(source.train->length()) + static_cast<double>(vocab_size());
      const double share = source.weight / total_weight;
      for (int64_t id = 0; id < vocab_size(); ++id) probability[id] += share * (counts[id] / total);
    }
    return probability;
  }

  // Windows of `length` input ids at `windows`, and their next ids as
  // targets; with document_mask, each input's document (B, T).
  Batch Windows(const std::vector<WindowAt>& windows, int64_t length) const {
    Batch b;
    b.batch = static_cast<int64_t>(windows.size());
    b.length = length;
    std::vector<int32_t> window(length + 1);
    for (const WindowAt& at : windows) {
      at.stream->Read(at.offset, length + 1, window.data());
      for (int32_t id : window)
        if (id < 0 || id >= vocab_size()) {
          std::fprintf(stderr, "token store file '%s' holds id %d outside the vocabulary of %lld: "
                       "the store is damaged; prepare it again (the run's checkpoints are "
                       "kept; --resume continues from the last one)\n",
                       at.stream->split().tokens_path().c_str(), id, static_cast<long long>(vocab_size()));
          std::exit(1);  // a damaged input, not a tvlab bug: no core dump
        }
      b.inputs.insert(b.inputs.end(), window.begin(), window.end() - 1);  // (B, T)
      b.targets.insert(b.targets.end(), window.begin() + 1, window.end());  // (B, T)
      if (!document_mask_) continue;
      b.documents.resize(b.inputs.size());  // (B, T)
      at.stream->ReadDocuments(at.offset, length, b.documents.data() + b.documents.size() - length);
    }
    return b;
  }

  std::shared_ptr<const OpenedStores> opened_;
  int64_t context_;   // training window length
  EvalWindows eval_;  // the evaluated windows and their scored targets
  bool document_mask_;              // options.document_mask: batches carry documents
};

TVLAB_REGISTER_TASK("token_store", TokenStoreTask, TokenStoreOptions);

}  // namespace
}  // namespace tvlab
