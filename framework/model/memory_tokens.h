#ifndef TVLAB_FRAMEWORK_MODEL_MEMORY_TOKENS_H_
#define TVLAB_FRAMEWORK_MODEL_MEMORY_TOKENS_H_

// Memory tokens (model.memory_tokens; registers): N learned vectors (N, C)
// prepended to every sequence a stack sees, their outputs dropped after the
// stack. The reference is x-transformers' num_memory_tokens: the vectors
// are packed in front after the additive positions (they carry none), and
// attention's positions (rotary, relative biases) count over the packed
// sequence, memory first. Unlike x-transformers (which turns its KV cache
// off with memory tokens), decoding keeps the cache: the first step feeds
// them once, later steps sit at attention position N + offset.

#include <cstdint>

#include "framework/autograd/var.h"
#include "framework/core/problems.h"
#include "framework/nn/module.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

class MemoryTokens : public Module {
 public:
  // One parameter "embedding" (N, C), drawn N(0, 1) like the token table.
  MemoryTokens(int64_t count, int64_t d_model);
  int64_t count() const { return count_; }
  // x (B, T, C) -> (B, N + T, C): the memory vectors, then x.
  Var Prepend(const Var& x) const;
  // h (B, N + T, C) -> (B, T, C): the real tokens' outputs.
  Var Strip(const Var& h) const;

 private:
  int64_t count_, d_model_;
  Var table_;  // (N, C)
};

// The problems of model.memory_tokens (a negative count).
void ValidateMemoryTokens(const Experiment& spec, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_MEMORY_TOKENS_H_
