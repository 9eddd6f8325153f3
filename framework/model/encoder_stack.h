#ifndef TVLAB_FRAMEWORK_MODEL_ENCODER_STACK_H_
#define TVLAB_FRAMEWORK_MODEL_ENCODER_STACK_H_

// A stack of Transformer blocks: self-attention and FFN sublayers, each
// inside the placement plugin's residual wrapper, with residual dropout on
// each sublayer's output (as torch.nn.TransformerEncoderLayer).

#include <memory>

#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/attention_score.h"
#include "framework/interfaces/ffn.h"
#include "framework/interfaces/norm_placement.h"
#include "framework/interfaces/normalization.h"
#include "framework/interfaces/position_encoding.h"
#include "framework/nn/layers.h"
#include "framework/nn/module.h"

namespace tvlab {

// Everything a block needs, made by the caller from the registries.
struct BlockFactory {
  std::function<std::unique_ptr<AttentionLayout>()> make_layout;
  std::function<std::unique_ptr<AttentionScore>()> make_score;
  std::function<std::unique_ptr<Ffn>()> make_ffn;
  std::function<std::unique_ptr<Normalization>()> make_norm;
  const NormPlacement* placement = nullptr;
};

class EncoderBlock : public Module {
 public:
  EncoderBlock(const BlockFactory& factory, float dropout);
  // x (B, T, C) -> (B, T, C)
  Var Forward(const Var& x, const Tensor& mask_bias, const PositionEncoding* position,
              const ForwardContext& ctx, const AttentionProbe* probe) const;
  const AttentionLayout& attention() const { return *attention_; }

 private:
  ResidualWrapper* attention_residual_;
  AttentionLayout* attention_;
  AttentionScore* score_;
  nn::Dropout* attention_dropout_;
  ResidualWrapper* ffn_residual_;
  Ffn* ffn_;
  nn::Dropout* ffn_dropout_;
};

class EncoderStack : public Module {
 public:
  EncoderStack(const BlockFactory& factory, int64_t layers, float dropout);
  Var Forward(const Var& x, const Tensor& mask_bias, const PositionEncoding* position,
              const ForwardContext& ctx, const AttentionProbe* probe) const;
  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const;

 private:
  std::vector<EncoderBlock*> blocks_;
  Normalization* final_norm_ = nullptr;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_ENCODER_STACK_H_
