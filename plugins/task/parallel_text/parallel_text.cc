// parallel_text (sequence pair): "source<TAB>target" lines, byte-level by
// default (tokens 4..259 are bytes 0..255 after the specials of
// interfaces/task.h) or SentencePiece (options.tokenizer, trained on both
// sides of the training pairs; its ids follow the specials the same way).
// The last heldout_fraction of the lines is the evaluation split; training
// draws lines per (seed, step) from the other lines, less every line whose
// pair also occurs in the evaluation split (the bundled file repeats pairs:
// 91 of its 300 held-out pairs used to occur among the training lines). Outputs are scored with corpus BLEU-4 on
// whitespace tokens. The file is read once, when the task is created.
//
// Example config: plugins/task/parallel_text/example.pbtxt

#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "framework/core/rng.h"
#include "framework/data/sequence_pairs.h"
#include "framework/data/text_file.h"
#include "framework/data/tokenizer.h"
#include "framework/interfaces/task.h"
#include "plugins/task/parallel_text/parallel_text.pb.h"

namespace tvlab {
namespace {

constexpr int32_t kFirstByte = 4;

struct Pairs {
  std::vector<Example> train, heldout;
  int64_t max_source = 0, max_target = 0;
  std::shared_ptr<const Tokenizer> tokenizer;
};

// The task's ids of `s`: the tokenizer's, after the specials.
std::vector<int32_t> Ids(const Tokenizer& tokenizer, const std::string& s) {
  std::vector<int32_t> out = tokenizer.Encode(s);
  for (int32_t& id : out) id += kFirstByte;
  return out;
}

struct Line {
  int number;
  std::string source, target;
};

absl::StatusOr<Pairs> ParsePairs(const ParallelTextOptions& o) {
  auto text = ReadTextFile(o.path(), "task.options.path");
  if (!text.ok()) return text.status();
  std::vector<Line> lines;
  Pairs pairs;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, '\t');
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty())
      return absl::InvalidArgumentError(absl::StrCat(
          o.path(), ":", line_number, ": expected 'source<TAB>target' with both sides non-empty, got ",
          parts.size() - 1, " tabs"));
    lines.push_back({line_number, std::string(parts[0]), std::string(parts[1])});
  }
  const int64_t heldout = static_cast<int64_t>(lines.size() * o.heldout_fraction());
  if (heldout < 1 || static_cast<int64_t>(lines.size()) - heldout < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "task.options.path: '", o.path(), "' has ", lines.size(),
        " pairs; need at least one in each split (heldout_fraction ", o.heldout_fraction(), ")"));
  // A SentencePiece model is trained on both sides of the training lines.
  std::vector<std::string> training_text;
  for (int64_t i = 0; i + heldout < static_cast<int64_t>(lines.size()); ++i) {
    training_text.push_back(lines[i].source);
    training_text.push_back(lines[i].target);
  }
  auto tokenizer = MakeTokenizer(o.tokenizer(), training_text, "task.options.tokenizer");
  if (!tokenizer.ok()) return tokenizer.status();
  pairs.tokenizer = std::move(*tokenizer);
  std::vector<Example> all;
  for (const Line& line : lines) {
    Example e{Ids(*pairs.tokenizer, line.source), Ids(*pairs.tokenizer, line.target)};
    if (static_cast<int64_t>(e.source.size()) > o.max_length() ||
        static_cast<int64_t>(e.target.size()) > o.max_length())
      return absl::InvalidArgumentError(absl::StrCat(
          o.path(), ":", line.number, ": a side is longer than task.options.max_length (",
          o.max_length(), " tokens); raise it or shorten the line"));
    pairs.max_source = std::max<int64_t>(pairs.max_source, e.source.size());
    pairs.max_target = std::max<int64_t>(pairs.max_target, e.target.size());
    all.push_back(std::move(e));
  }
  pairs.heldout.assign(all.end() - heldout, all.end());
  std::set<std::pair<std::vector<int32_t>, std::vector<int32_t>>> held;
  for (const Example& e : pairs.heldout) held.emplace(e.source, e.target);
  for (auto it = all.begin(); it != all.end() - heldout; ++it)
    if (held.count({it->source, it->target}) == 0) pairs.train.push_back(*it);
  if (pairs.train.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        "task.options.path: every training line of '", o.path(),
        "' repeats a held-out pair; nothing is left to train on"));
  return pairs;
}

class ParallelText : public SequencePairTaskBase {
 public:
  static absl::Status Validate(const ParallelTextOptions& o, const TaskArgs&) {
    if (o.path().empty())
      return absl::InvalidArgumentError("task.options.path is required: a source<TAB>target file");
    if (!(o.heldout_fraction() > 0 && o.heldout_fraction() < 1))
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.heldout_fraction must be in (0, 1) (got ", o.heldout_fraction(), ")"));
    if (o.max_length() < 1)
      return absl::InvalidArgumentError("task.options.max_length must be >= 1");
    return ValidateTokenizerOptions(o.tokenizer(), "task.options.tokenizer");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const ParallelTextOptions& o,
                                                      const TaskArgs& args) {
    auto pairs = ParsePairs(o);
    if (!pairs.ok()) return pairs.status();
    return std::unique_ptr<Task>(new ParallelText(args.family, *std::move(pairs)));
  }

  ParallelText(ModelSpec::Family family, Pairs pairs)
      : SequencePairTaskBase(family), pairs_(std::move(pairs)) {}
  int64_t vocab_size() const override { return kFirstByte + pairs_.tokenizer->vocab_size(); }
  int64_t NumEvalExamples(int64_t requested) const override {
    return std::min<int64_t>(requested, pairs_.heldout.size());
  }
  bool ScoredWithBleu() const override { return true; }
  std::vector<int32_t> Tokenize(const std::string& text) const override {
    return Ids(*pairs_.tokenizer, text);
  }
  std::string Detokenize(const std::vector<int32_t>& tokens) const override {
    std::vector<int32_t> ids;
    for (int32_t t : tokens)
      if (t >= kFirstByte) ids.push_back(t - kFirstByte);
    return pairs_.tokenizer->Decode(ids);
  }
  std::string TokenizerModel() const override { return pairs_.tokenizer->SerializedModel(); }

 protected:
  int64_t max_source_length() const override { return pairs_.max_source; }
  int64_t max_target_length() const override { return pairs_.max_target; }
  Example TrainExample(uint64_t seed, int64_t index) const override {
    RngStream rng(seed, RngPurpose::kTrainData, index);
    return pairs_.train[rng.UniformInt(0, static_cast<uint32_t>(pairs_.train.size()))];
  }
  Example HeldOutExample(uint64_t, int64_t index) const override {
    return pairs_.heldout[index % pairs_.heldout.size()];
  }

 private:
  Pairs pairs_;
};

TVLAB_REGISTER_TASK("parallel_text", ParallelText, ParallelTextOptions);

}  // namespace
}  // namespace tvlab
