// parallel_text (sequence pair): "source<TAB>target" lines, byte-level
// (tokens 4..259 are bytes 0..255 after the specials of interfaces/task.h).
// The last heldout_fraction of the lines is the evaluation split; training
// draws lines per (seed, step) from the other lines, less every line whose
// pair also occurs in the evaluation split (the bundled file repeats pairs:
// 91 of its 300 held-out pairs used to occur among the training lines). Outputs are scored with corpus BLEU-4 on
// whitespace tokens. The file is read once, when the task is created.
//
// Example config: plugins/task/parallel_text/example.pbtxt

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "framework/core/rng.h"
#include "framework/data/sequence_pairs.h"
#include "framework/data/text_file.h"
#include "framework/interfaces/task.h"
#include "plugins/task/parallel_text/parallel_text.pb.h"

namespace tvlab {
namespace {

constexpr int32_t kFirstByte = 4;

struct Pairs {
  std::vector<Example> train, heldout;
  int64_t max_source = 0, max_target = 0;
};

std::vector<int32_t> Bytes(absl::string_view s) {
  std::vector<int32_t> out;
  for (unsigned char c : s) out.push_back(kFirstByte + c);
  return out;
}

absl::StatusOr<Pairs> ParsePairs(const ParallelTextOptions& o) {
  auto text = ReadTextFile(o.path(), "task.options.path");
  if (!text.ok()) return text.status();
  std::vector<Example> all;
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
    if (static_cast<int64_t>(parts[0].size()) > o.max_length() ||
        static_cast<int64_t>(parts[1].size()) > o.max_length())
      return absl::InvalidArgumentError(absl::StrCat(
          o.path(), ":", line_number, ": a side is longer than task.options.max_length (",
          o.max_length(), " bytes); raise it or shorten the line"));
    all.push_back({Bytes(parts[0]), Bytes(parts[1])});
    pairs.max_source = std::max<int64_t>(pairs.max_source, parts[0].size());
    pairs.max_target = std::max<int64_t>(pairs.max_target, parts[1].size());
  }
  const int64_t heldout = static_cast<int64_t>(all.size() * o.heldout_fraction());
  if (heldout < 1 || static_cast<int64_t>(all.size()) - heldout < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "task.options.path: '", o.path(), "' has ", all.size(),
        " pairs; need at least one in each split (heldout_fraction ", o.heldout_fraction(), ")"));
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
    return absl::OkStatus();
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const ParallelTextOptions& o,
                                                      const TaskArgs& args) {
    auto pairs = ParsePairs(o);
    if (!pairs.ok()) return pairs.status();
    return std::unique_ptr<Task>(new ParallelText(args.family, *std::move(pairs)));
  }

  ParallelText(ModelSpec::Family family, Pairs pairs)
      : SequencePairTaskBase(family), pairs_(std::move(pairs)) {}
  int64_t vocab_size() const override { return kFirstByte + 256; }
  int64_t NumEvalExamples(int64_t requested) const override {
    return std::min<int64_t>(requested, pairs_.heldout.size());
  }
  bool ScoredWithBleu() const override { return true; }
  std::vector<int32_t> Tokenize(const std::string& text) const override { return Bytes(text); }
  std::string Detokenize(const std::vector<int32_t>& tokens) const override {
    std::string out;
    for (int32_t t : tokens)
      if (t >= kFirstByte) out += static_cast<char>(t - kFirstByte);
    return out;
  }

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
