#ifndef TVLAB_FRAMEWORK_MODEL_FAMILIES_H_
#define TVLAB_FRAMEWORK_MODEL_FAMILIES_H_

// The three model families (see model.h). Internal to framework/model.

#include <memory>

#include "framework/model/block_stack.h"
#include "framework/model/model.h"

namespace tvlab {

// Token embedding (× sqrt(C) when configured) plus the position plugin's
// additive part, for tokens at positions [offset, offset + T). Holds the
// model's "embedding" and "position" children (owned by the model, so the
// parameter names are embedding.weight and position.*).
struct TokenEmbedder {
  int64_t d_model = 0;
  bool scale = true;
  const nn::Embedding* table = nullptr;
  const PositionEncoding* position = nullptr;
  Var Forward(const std::vector<int32_t>& ids, int64_t batch, int64_t length, int64_t offset) const;
};

std::unique_ptr<Model> MakeEncoderOnly(const ModelSpec& spec, int64_t vocab, int64_t outputs,
                                       const StackFactories& stacks,
                                       std::unique_ptr<PositionEncoding> position);
std::unique_ptr<Model> MakeDecoderOnly(const ModelSpec& spec, int64_t vocab,
                                       const StackFactories& stacks,
                                       std::unique_ptr<PositionEncoding> position);
std::unique_ptr<Model> MakeEncoderDecoder(const ModelSpec& spec, int64_t vocab,
                                          const StackFactories& stacks,
                                          std::unique_ptr<PositionEncoding> position);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_FAMILIES_H_
