// text_lm: a byte-level causal language model on any text file. Tokens are
// bytes (vocabulary 256). The last heldout_fraction of the file is the
// evaluation split; training windows of context_length + 1 bytes start at
// offsets drawn per (seed, step); evaluation walks the held-out split in
// consecutive windows.

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/core/rng.h"
#include "framework/data/task.h"
#include "framework/data/text_file.h"

namespace tvlab {
namespace {

class TextLm : public Task {
 public:
  TextLm(std::string text, const TextLmTask& spec) : context_(spec.context_length()) {
    const int64_t split = static_cast<int64_t>(text.size() * (1.0 - spec.heldout_fraction()));
    train_ = text.substr(0, split);
    heldout_ = text.substr(split);
  }

  TaskKind kind() const override { return TaskKind::kLanguageModel; }
  int64_t vocab_size() const override { return 256; }
  int64_t max_length() const override { return context_; }

  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    RngStream rng(seed, RngPurpose::kTrainData, step);
    const uint32_t starts = static_cast<uint32_t>(train_.size() - context_);
    std::vector<int64_t> offsets;
    for (int64_t r = 0; r < batch_size; ++r) offsets.push_back(rng.UniformInt(r, starts));
    return Windows(train_, offsets);
  }
  Batch EvalBatch(uint64_t, int64_t first, int64_t count) const override {
    std::vector<int64_t> offsets;
    for (int64_t r = 0; r < count; ++r) offsets.push_back((first + r) * context_);
    return Windows(heldout_, offsets);
  }
  int64_t NumEvalExamples(int64_t requested) const override {
    return std::min<int64_t>(requested, (static_cast<int64_t>(heldout_.size()) - 1) / context_);
  }
  std::vector<int32_t> Tokenize(const std::string& text) const override {
    return std::vector<int32_t>(text.begin(), text.end()) ;
  }
  std::string Detokenize(const std::vector<int32_t>& tokens) const override {
    std::string out;
    for (int32_t t : tokens) out += static_cast<char>(t);
    return out;
  }
  double UnigramPerplexity() const override {
    // Add-one smoothed byte frequencies of the training split, scored on the
    // held-out bytes that evaluation predicts.
    std::vector<double> counts(256, 1.0);
    for (unsigned char c : train_) counts[c] += 1.0;
    const double total = static_cast<double>(train_.size()) + 256.0;
    const int64_t n = NumEvalExamples(1 << 30) * context_;
    double nll = 0;
    for (int64_t i = 1; i <= n; ++i) nll -= std::log(counts[static_cast<unsigned char>(heldout_[i])] / total);
    return std::exp(nll / std::max<int64_t>(n, 1));
  }

 private:
  Batch Windows(const std::string& text, const std::vector<int64_t>& offsets) const {
    Batch b;
    b.batch = static_cast<int64_t>(offsets.size());
    b.length = context_;
    for (int64_t offset : offsets)
      for (int64_t t = 0; t < context_; ++t) {
        b.inputs.push_back(static_cast<unsigned char>(text[offset + t]));
        b.targets.push_back(static_cast<unsigned char>(text[offset + t + 1]));
      }
    return b;
  }

  int64_t context_;
  std::string train_, heldout_;
};

absl::Status Validate(const Experiment& spec) {
  const TextLmTask& t = spec.task().text_lm();
  if (t.context_length() < 2)
    return absl::InvalidArgumentError(absl::StrCat("task.text_lm.context_length must be >= 2 (got ", t.context_length(), ")"));
  if (!(t.heldout_fraction() > 0 && t.heldout_fraction() < 1))
    return absl::InvalidArgumentError(absl::StrCat("task.text_lm.heldout_fraction must be in (0, 1) (got ", t.heldout_fraction(), ")"));
  auto text = ReadTextFile(t.path(), "task.text_lm.path");
  if (!text.ok()) return text.status();
  const double heldout = text->size() * t.heldout_fraction();
  if (text->size() * (1.0 - t.heldout_fraction()) < 2.0 * (t.context_length() + 1) || heldout < t.context_length() + 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "task.text_lm.path: '", t.path(), "' has ", text->size(), " bytes, too few for windows of ",
        t.context_length(), " bytes in both splits; use a longer file or a shorter context_length"));
  return absl::OkStatus();
}

TVLAB_REGISTER_TASK("text_lm", TaskKind::kLanguageModel, Validate,
                    [](const Experiment& spec) -> std::unique_ptr<Task> {
                      return std::make_unique<TextLm>(*ReadTextFile(spec.task().text_lm().path(), ""),
                                                      spec.task().text_lm());
                    });

}  // namespace
}  // namespace tvlab
