#include "framework/data/eval_train_overlap.h"

#include <algorithm>
#include <unordered_set>

namespace tvlab {
namespace {

void AppendTokens(const int32_t* tokens, int64_t count, std::string* out) {
  out->append(reinterpret_cast<const char*>(tokens), count * sizeof(int32_t));
}

}  // namespace

std::vector<std::string> RowContents(const Batch& b) {
  std::vector<std::string> rows(b.batch);
  for (int64_t r = 0; r < b.batch; ++r) {
    const int64_t n = b.lengths.empty() ? b.length : b.lengths[r];
    AppendTokens(b.inputs.data() + r * b.length, n, &rows[r]);  // (B, T) row r
    if (b.source_length > 0) {
      rows[r] += '|';
      const int64_t s = b.source_lengths.empty() ? b.source_length : b.source_lengths[r];
      AppendTokens(b.source.data() + r * b.source_length, s, &rows[r]);  // (B, S) row r
    }
  }
  return rows;
}

EvalTrainOverlap MeasureEvalTrainOverlap(const Task& task, uint64_t train_seed,
                                         int64_t train_batches, int64_t batch_size,
                                         uint64_t eval_seed, int64_t eval_examples) {
  EvalTrainOverlap result;
  std::unordered_set<std::string> eval;
  std::vector<std::string> eval_rows;
  constexpr int64_t kChunk = 256;
  for (int64_t first = 0; first < eval_examples; first += kChunk) {
    std::vector<std::string> rows =
        RowContents(task.EvalBatch(eval_seed, first, std::min(kChunk, eval_examples - first)));
    for (std::string& row : rows) {
      eval.insert(row);
      eval_rows.push_back(std::move(row));
    }
  }
  result.eval_examples = static_cast<int64_t>(eval_rows.size());
  std::unordered_set<std::string> seen;  // evaluation contents met in training
  for (int64_t index = 0; index < train_batches; ++index) {
    for (std::string& row : RowContents(task.TrainBatch(train_seed, index, batch_size))) {
      ++result.train_examples;
      if (eval.count(row)) seen.insert(std::move(row));
    }
  }
  for (const std::string& row : eval_rows) result.overlapping += seen.count(row);
  return result;
}

}  // namespace tvlab
