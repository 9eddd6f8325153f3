#include "framework/distributed/shard_batch.h"

#include <algorithm>

#include "framework/core/check.h"

namespace tvlab {
namespace {

// Rows [first, first + rows) of a row-major (B, width) array; an empty
// array (a field the task does not use) stays empty.
template <typename T>
std::vector<T> Rows(const std::vector<T>& all, int64_t batch, int64_t first, int64_t rows) {
  if (all.empty()) return {};
  TVLAB_CHECK_EQ(static_cast<int64_t>(all.size()) % batch, 0);
  const int64_t width = static_cast<int64_t>(all.size()) / batch;
  return std::vector<T>(all.begin() + first * width, all.begin() + (first + rows) * width);
}

}  // namespace

Batch ShardBatch(const Batch& global, int rank, int size) {
  if (size == 1) return global;
  TVLAB_CHECK_EQ(global.batch % size, 0) << "batch " << global.batch << " over " << size << " ranks";
  const int64_t rows = global.batch / size, first = rank * rows;
  Batch shard;
  shard.batch = rows;
  shard.length = global.length;
  shard.inputs = Rows(global.inputs, global.batch, first, rows);
  shard.targets = Rows(global.targets, global.batch, first, rows);
  shard.lengths = Rows(global.lengths, global.batch, first, rows);
  shard.documents = Rows(global.documents, global.batch, first, rows);
  shard.source_length = global.source_length;
  shard.source = Rows(global.source, global.batch, first, rows);
  shard.source_lengths = Rows(global.source_lengths, global.batch, first, rows);
  return shard;
}

int64_t TargetTokens(const Batch& batch) {
  return std::count_if(batch.targets.begin(), batch.targets.end(),
                       [](int32_t t) { return t != kIgnoreTarget; });
}

}  // namespace tvlab
