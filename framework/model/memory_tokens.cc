#include "framework/model/memory_tokens.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"

namespace tvlab {

MemoryTokens::MemoryTokens(int64_t count, int64_t d_model) : count_(count), d_model_(d_model) {
  table_ = AddParameter("embedding", {count, d_model}, Init::Normal(1.0f));
}

Var MemoryTokens::Prepend(const Var& x) const {
  const int64_t b = x.dim(0);
  // Rows 0 .. N-1 of the table for every batch row: an embedding lookup, so
  // the table's gradient sums over the batch.
  std::vector<int32_t> ids(b * count_);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t i = 0; i < count_; ++i) ids[r * count_ + i] = static_cast<int32_t>(i);
  Var memory = Reshape(Embedding(table_, ids), {b, count_, d_model_});  // (B, N, C)
  return Concat({memory, x}, 1);                                          // (B, N + T, C)
}

Var MemoryTokens::Strip(const Var& h) const {
  return Slice(h, 1, count_, h.dim(1) - count_);  // (B, N + T, C) -> (B, T, C)
}

void ValidateMemoryTokens(const Experiment& spec, Problems* problems) {
  const int32_t n = spec.model().memory_tokens().count();
  if (n < 0)
    problems->Add(absl::StrCat("model.memory_tokens.count must be >= 0 (got ", n,
                               "); 0 turns memory tokens off, e.g. 4 prepends four"));
}

}  // namespace tvlab
