// needle (causal tagging): needle-in-a-haystack retrieval. A row of
// context_length tokens is
//
//   f f f ... k v f f ... f k      (inputs)
//   - - - ... - - - - ... - v      (targets; - = ignored)
//
// filler f from [V/2, V), one needle: a key k from [0, V/4) followed by its
// value v from [V/4, V/2), starting at position round(depth * (T - 3)) (depth
// 0: the first position; 1: just before the query), and the key again as the
// last token, whose target is v. Accuracy counts that answer only (chance:
// 1 / (V/4)). Evaluation rows put the needle at `depth`; training rows at a
// uniformly random depth unless train_random_depth is false.
//
// Training rows are a pure function of (seed, step) from the kTrainData
// stream; held-out rows come from the eval seed's kEvalData stream, and each
// row belongs to one split by a hash of its tokens (framework/data/
// heldout_split.h), so no evaluation row is ever a training row.
//
// Example config: plugins/task/needle/example.pbtxt

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/core/rng.h"
#include "framework/data/heldout_split.h"
#include "framework/interfaces/task.h"
#include "plugins/task/needle/needle.pb.h"

namespace tvlab {
namespace {

class Needle : public CausalTaggingTask {
 public:
  static absl::Status Validate(const NeedleOptions& o, const TaskArgs&) {
    if (o.vocab_size() < 8)
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.vocab_size must be >= 8 (got ", o.vocab_size(),
          "): keys take [0, V/4), values [V/4, V/2), filler [V/2, V)"));
    if (o.context_length() < 4)
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.context_length must be >= 4 (got ", o.context_length(),
          "): the needle (2 tokens), at least one filler token and the query"));
    if (!(o.depth() >= 0 && o.depth() <= 1))
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.depth must be in [0, 1] (got ", o.depth(),
          "): the needle's relative position, 0 = first token, 1 = just before the query"));
    const double filler = o.vocab_size() - o.vocab_size() / 2;
    return CheckSplittable(std::pow(filler, std::min(o.context_length() - 3, 8)) * (o.vocab_size() / 4),
                           absl::StrCat("filler of ", filler, " tokens around one needle"), "task.options");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const NeedleOptions& o, const TaskArgs&) {
    return std::unique_ptr<Task>(new Needle(o));
  }
  explicit Needle(const NeedleOptions& o) : o_(o) {}

  int64_t vocab_size() const override { return o_.vocab_size(); }
  int64_t max_length() const override { return o_.context_length(); }
  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    return Draw(RngStream(seed, RngPurpose::kTrainData, step), 0, batch_size, /*heldout=*/false);
  }
  Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const override {
    return Draw(RngStream(eval_seed, RngPurpose::kEvalData, 0), first, count, /*heldout=*/true);
  }
  // The needle's first position in a row at relative depth `depth`.
  static int64_t NeedleAt(double depth, int64_t T) { return std::llround(depth * static_cast<double>(T - 3)); }

 private:
  // Words of one row: key, value, depth, then one per filler position.
  int64_t WordsPerRow() const { return 3 + o_.context_length(); }

  void DrawRow(const RngStream& rng, uint64_t word, bool heldout, int32_t* in, int32_t* target) const {
    const int32_t V = o_.vocab_size(), T = o_.context_length();
    const int32_t key = static_cast<int32_t>(rng.UniformInt(word, V / 4));
    const int32_t value = V / 4 + static_cast<int32_t>(rng.UniformInt(word + 1, V / 2 - V / 4));
    const bool random_depth = !heldout && o_.train_random_depth();
    const int64_t at = random_depth ? rng.UniformInt(word + 2, T - 2) : NeedleAt(o_.depth(), T);
    for (int32_t t = 0; t < T; ++t) {
      in[t] = V / 2 + static_cast<int32_t>(rng.UniformInt(word + 3 + t, V - V / 2));
      target[t] = kIgnoreTarget;
    }
    in[at] = key;
    in[at + 1] = value;
    in[T - 1] = key;
    target[T - 1] = value;
  }

  // Row i uses words [i * WordsPerRow(), ...) (plus SplitDrawOffset on a
  // redraw), redrawn until it is in the wanted split.
  Batch Draw(const RngStream& rng, int64_t first, int64_t count, bool heldout) const {
    const int64_t T = o_.context_length();
    Batch b;
    b.batch = count;
    b.length = T;
    b.inputs.resize(count * T);   // (B, T)
    b.targets.resize(count * T);  // (B, T)
    for (int64_t r = 0; r < count; ++r) {
      for (int attempt = 0;; ++attempt) {
        if (attempt == kMaxSplitDraws) SplitDrawsExhausted("needle", heldout);
        DrawRow(rng, SplitDrawOffset(attempt) + (first + r) * WordsPerRow(), heldout, &b.inputs[r * T],
                &b.targets[r * T]);
        if (IsHeldOut(&b.inputs[r * T], T) == heldout) break;
      }
    }
    return b;
  }

  NeedleOptions o_;
};

TVLAB_REGISTER_TASK("needle", Needle, NeedleOptions);

}  // namespace
}  // namespace tvlab
