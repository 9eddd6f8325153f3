// associative_recall (causal tagging): multi-query associative recall (MQAR;
// Arora et al. 2023, "Zoology"). A row of seq_len tokens is
//
//   k1 v1 k2 v2 ... kn vn | f f q f f f q' f ...
//   -  -  -  -      -  -    - - v - - - v' -      (targets; - = ignored)
//
// n = num_pairs distinct keys from [1, V/2) with values from [V/2, V) (both
// drawn without replacement, as Zoology does), then the query region: its
// (seq_len - 2n) / 2 slots of two tokens, of which num_queries, chosen
// uniformly, start with a key of the pairs (distinct keys, in random order);
// the target at a query's position is that key's value, every other target
// is ignored, so the loss, token accuracy (= recall accuracy) and sequence
// accuracy (every query of a row right) count the answers only. Filler
// positions hold a random token of the whole vocabulary (random_filler,
// Zoology's random_non_queries) or 0. Unlike Zoology, query slots are
// uniform rather than power-law in their distance from the pairs.
//
// Training rows are a pure function of (seed, step) from the kTrainData
// stream; held-out rows come from the eval seed's kEvalData stream, and each
// row belongs to one split by a hash of its tokens (framework/data/
// heldout_split.h), so no evaluation row is ever a training row.
//
// Example config: plugins/task/associative_recall/example.pbtxt

#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/core/rng.h"
#include "framework/data/heldout_split.h"
#include "framework/interfaces/task.h"
#include "plugins/task/associative_recall/associative_recall.pb.h"

namespace tvlab {
namespace {

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("task.options.", message));
}

class AssociativeRecall : public CausalTaggingTask {
 public:
  static absl::Status Validate(const AssociativeRecallOptions& o, const TaskArgs&) {
    if (o.vocab_size() < 4)
      return Invalid(absl::StrCat("vocab_size must be >= 4 (got ", o.vocab_size(),
                                  "): keys take [1, V/2), values [V/2, V); Zoology uses 8192"));
    if (o.num_pairs() < 1) return Invalid(absl::StrCat("num_pairs must be >= 1 (got ", o.num_pairs(), ")"));
    if (o.num_queries() < 1 || o.num_queries() > o.num_pairs())
      return Invalid(absl::StrCat("num_queries must be in [1, num_pairs = ", o.num_pairs(), "] (got ",
                                  o.num_queries(), "): each query asks a different key of the pairs"));
    const int keys = o.vocab_size() / 2 - 1, values = o.vocab_size() - o.vocab_size() / 2;
    if (o.num_pairs() > keys || o.num_pairs() > values)
      return Invalid(absl::StrCat("num_pairs = ", o.num_pairs(), " exceeds the ", std::min(keys, values),
                                  " distinct keys or values of vocab_size = ", o.vocab_size(),
                                  "; raise vocab_size to at least ", 2 * o.num_pairs() + 2, " or lower num_pairs"));
    const int64_t needed = 2 * static_cast<int64_t>(o.num_pairs()) + 2 * static_cast<int64_t>(o.num_queries());
    if (needed > o.seq_len())
      return Invalid(absl::StrCat("num_pairs*2 + num_queries*2 = ", o.num_pairs(), "*2 + ", o.num_queries(),
                                  "*2 = ", needed, " exceeds seq_len = ", o.seq_len(),
                                  " (the pairs, then a slot of 2 tokens per query); raise task.options.seq_len to at "
                                  "least ",
                                  needed, " or lower task.options.num_pairs or task.options.num_queries"));
    // Distinct rows: at least the ordered choices of keys and values.
    double distinct = 1;
    for (int i = 0; i < o.num_pairs() && distinct < 1e6; ++i) distinct *= double(keys - i) * double(values - i);
    return CheckSplittable(distinct, absl::StrCat(o.num_pairs(), " pairs of ", keys, " keys and ", values, " values"),
                           "task.options");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const AssociativeRecallOptions& o, const TaskArgs&) {
    return std::unique_ptr<Task>(new AssociativeRecall(o));
  }
  explicit AssociativeRecall(const AssociativeRecallOptions& o) : o_(o) {}

  int64_t vocab_size() const override { return o_.vocab_size(); }
  int64_t max_length() const override { return o_.seq_len(); }
  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    return Draw(RngStream(seed, RngPurpose::kTrainData, step), 0, batch_size, /*heldout=*/false);
  }
  Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const override {
    return Draw(RngStream(eval_seed, RngPurpose::kEvalData, 0), first, count, /*heldout=*/true);
  }

 private:
  // Random words one row uses: keys, values, queried pairs, query slots, filler.
  int64_t WordsPerRow() const { return 2 * o_.num_pairs() + 2 * o_.num_queries() + o_.seq_len(); }

  // The first `take` of a uniform random permutation of [0, n) (partial
  // Fisher-Yates), from words [word, word + take) of `rng`.
  static std::vector<int32_t> Choose(const RngStream& rng, uint64_t word, int32_t n, int32_t take) {
    std::vector<int32_t> pool(n);
    std::iota(pool.begin(), pool.end(), 0);
    for (int32_t i = 0; i < take; ++i)
      std::swap(pool[i], pool[i + rng.UniformInt(word + i, static_cast<uint32_t>(n - i))]);
    pool.resize(take);
    return pool;
  }

  // One row's inputs and targets, (T) each, from words starting at `word`.
  void DrawRow(const RngStream& rng, uint64_t word, int32_t* in, int32_t* target) const {
    const int32_t V = o_.vocab_size(), n = o_.num_pairs(), q = o_.num_queries(), T = o_.seq_len();
    const int32_t half = V / 2;
    const std::vector<int32_t> keys = Choose(rng, word, half - 1, n);                    // + 1: keys in [1, V/2)
    const std::vector<int32_t> values = Choose(rng, word + n, V - half, n);             // + half
    const std::vector<int32_t> asked = Choose(rng, word + 2 * n, n, q);                 // which pairs
    const std::vector<int32_t> slots = Choose(rng, word + 2 * n + q, (T - 2 * n) / 2, q);  // where
    const uint64_t filler = word + 2 * n + 2 * q;
    for (int32_t t = 0; t < T; ++t) {
      in[t] = o_.random_filler() ? static_cast<int32_t>(rng.UniformInt(filler + t, V)) : 0;
      target[t] = kIgnoreTarget;
    }
    for (int32_t i = 0; i < n; ++i) {
      in[2 * i] = keys[i] + 1;
      in[2 * i + 1] = values[i] + half;
    }
    for (int32_t j = 0; j < q; ++j) {
      const int32_t at = 2 * n + 2 * slots[j];
      in[at] = keys[asked[j]] + 1;
      target[at] = values[asked[j]] + half;
    }
  }

  // Row i uses words [i * WordsPerRow(), ...) (plus SplitDrawOffset on a
  // redraw), redrawn until it is in the wanted split.
  Batch Draw(const RngStream& rng, int64_t first, int64_t count, bool heldout) const {
    const int64_t T = o_.seq_len();
    Batch b;
    b.batch = count;
    b.length = T;
    b.inputs.resize(count * T);   // (B, T)
    b.targets.resize(count * T);  // (B, T)
    for (int64_t r = 0; r < count; ++r) {
      for (int attempt = 0;; ++attempt) {
        if (attempt == kMaxSplitDraws) SplitDrawsExhausted("associative_recall", heldout);
        DrawRow(rng, SplitDrawOffset(attempt) + (first + r) * WordsPerRow(), &b.inputs[r * T], &b.targets[r * T]);
        if (IsHeldOut(&b.inputs[r * T], T) == heldout) break;
      }
    }
    return b;
  }

  AssociativeRecallOptions o_;
};

TVLAB_REGISTER_TASK("associative_recall", AssociativeRecall, AssociativeRecallOptions);

}  // namespace
}  // namespace tvlab
