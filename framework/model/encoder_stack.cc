#include "framework/model/encoder_stack.h"

namespace tvlab {

EncoderBlock::EncoderBlock(const BlockFactory& factory, float dropout) {
  attention_residual_ = AddChild("attention_residual", factory.placement->Wrap());
  attention_ = AddChild("attention", factory.make_layout());
  score_ = AddChild("score", factory.make_score());
  attention_dropout_ = AddChild("attention_dropout", std::make_unique<nn::Dropout>(dropout));
  ffn_residual_ = AddChild("ffn_residual", factory.placement->Wrap());
  ffn_ = AddChild("ffn", factory.make_ffn());
  ffn_dropout_ = AddChild("ffn_dropout", std::make_unique<nn::Dropout>(dropout));
}

Var EncoderBlock::Forward(const Var& x, const Tensor& mask_bias,
                          const PositionEncoding* position, const ForwardContext& ctx,
                          const AttentionProbe* probe) const {
  Var h = attention_residual_->Forward(x, [&](const Var& in) {
    AttentionInput a;
    a.x = in;  // (B, T, C)
    a.mask_bias = mask_bias;
    a.score = score_;
    a.position = position;
    a.ctx = ctx;
    a.probe = probe;
    return attention_dropout_->Forward(attention_->Forward(a), ctx);
  });
  return ffn_residual_->Forward(h, [&](const Var& in) {
    return ffn_dropout_->Forward(ffn_->Forward(in, ctx), ctx);  // (B, T, C)
  });
}

EncoderStack::EncoderStack(const BlockFactory& factory, int64_t layers, float dropout) {
  auto* list = AddChild("layers", std::make_unique<ModuleList>());
  for (int64_t i = 0; i < layers; ++i)
    blocks_.push_back(list->Append(std::make_unique<EncoderBlock>(factory, dropout)));
  if (factory.placement->NeedsFinalNorm()) final_norm_ = AddChild("final_norm", factory.make_norm());
}

Var EncoderStack::Forward(const Var& x, const Tensor& mask_bias,
                          const PositionEncoding* position, const ForwardContext& ctx,
                          const AttentionProbe* probe) const {
  Var h = x;  // (B, T, C)
  for (const EncoderBlock* block : blocks_) h = block->Forward(h, mask_bias, position, ctx, probe);
  return final_norm_ ? final_norm_->Forward(h) : h;
}

int64_t EncoderStack::KvCacheBytesPerToken(int64_t bytes_per_element) const {
  int64_t total = 0;
  for (const EncoderBlock* block : blocks_)
    total += block->attention().KvCacheBytesPerToken(bytes_per_element);
  return total;
}

}  // namespace tvlab
