#include "framework/model/block_stack.h"

#include "framework/autograd/checkpoint.h"
#include "framework/autograd/ops.h"
#include "framework/core/check.h"
#include "framework/model/activation_recorder.h"

namespace tvlab {

TransformerBlock::TransformerBlock(const BlockFactory& factory, float dropout,
                                   bool cross_attention)
    : window_(factory.window), init_gain_(factory.placement->SublayerInitGain()) {
  AddAttention("attention", factory, dropout, &self_);
  if (cross_attention) AddAttention("cross_attention", factory, dropout, &cross_);
  ffn_residual_ = AddChild("ffn_residual", factory.placement->Wrap());
  ffn_ = AddChild("ffn", factory.make_ffn());
  ffn_dropout_ = AddChild("ffn_dropout", std::make_unique<nn::Dropout>(dropout));
  if (factory.make_position) own_position_ = AddChild("position", factory.make_position());
  if (factory.make_value_residual)
    value_residual_ = AddChild("value_residual", factory.make_value_residual());
}

void TransformerBlock::AddAttention(const std::string& name, const BlockFactory& factory,
                                    float dropout, Sublayer* out) {
  // Parameter names: "<name>_residual.norm...", "<name>.w_q...", "<name>_score..."
  out->residual = AddChild(name + "_residual", factory.placement->Wrap());
  out->attention = AddChild(name, factory.make_layout());
  out->score = AddChild(name == "attention" ? std::string("score") : name + "_score",
                        factory.make_score());
  out->dropout = AddChild(name + "_dropout", std::make_unique<nn::Dropout>(dropout));
  if (factory.make_attention_extras)  // "<name>_options.q_norm", "<name>_options.gate.weight", ...
    out->extras = AddChild(name + "_options", factory.make_attention_extras());
}

Var TransformerBlock::Attend(const Sublayer& s, const Var& x, const StackInput& in,
                             const PositionEncoding* position, const Var& memory,
                             const AttentionMask& mask, KvCache* cache, int64_t offset) const {
  return s.residual->Forward(x, [&](const Var& h) {
    AttentionInput a;
    a.x = h;  // (B, T, C)
    a.memory = memory;
    a.mask = mask;
    a.position_offset = offset;
    a.score = s.score;
    a.position = position;
    a.ctx = in.ctx;
    a.probe = in.probe;
    a.cache = cache;
    a.extras = s.extras;
    if (&s == &self_ && value_residual_ != nullptr && in.value_state != nullptr) {
      ValueResidualState* state = in.value_state;
      a.mix_values = [this, state](const Var& v) { return value_residual_->Mix(v, state); };
    }
    return s.dropout->Forward(s.attention->Forward(a), in.ctx);
  });
}

Var TransformerBlock::Forward(const Var& x, const StackInput& in, size_t layer) const {
  KvCache* self_cache = in.self_caches ? &(*in.self_caches)[layer] : nullptr;
  AttentionMask self_mask = in.self_mask;  // the stack's mask, with this block's window
  self_mask.window = window_;
  // This layer's position plugin (its own under a per-layer override, else
  // the model's), as this layer sees it (its own bias table, if any).
  const PositionEncoding* base = own_position_ != nullptr ? own_position_ : in.position;
  const PositionEncoding* position =
      base ? &base->AtSite({in.self_mask.causal, static_cast<int64_t>(layer)}) : nullptr;
  Var h = Attend(self_, x, in, position, Var(), self_mask, self_cache, in.position_offset);
  if (cross_.attention != nullptr) {
    KvCache* cross_cache = in.cross_caches ? &(*in.cross_caches)[layer] : nullptr;
    h = Attend(cross_, h, in, position, in.memory, in.cross_mask, cross_cache, in.position_offset);
  }
  return ffn_residual_->Forward(h, [&](const Var& v) {
    return ffn_dropout_->Forward(ffn_->Forward(v, in.ctx), in.ctx);  // (B, T, C)
  });
}

namespace {

// Multiplies every parameter of `module` whose name below it starts with one
// of `prefixes` ("" matches all) by `gain`.
void ScaleParameters(const Module& module, const std::vector<std::string>& prefixes, float gain) {
  const std::string root = module.path().empty() ? "" : module.path() + ".";
  for (auto& [name, var] : module.NamedParameters()) {
    const std::string local = name.substr(root.size());
    for (const std::string& prefix : prefixes) {
      if (local.compare(0, prefix.size(), prefix) != 0) continue;
      Var p = var;
      p.mutable_value() = Scale(Var(p.value()), gain).value();
      break;
    }
  }
}

}  // namespace

// DeepNorm's beta (the deepnorm placement's scale_init, see
// NormPlacement::SublayerInitGain; the init plugin "deepnorm" is the paper's
// full init instead): as the paper's pseudo-code and torchscale, the value
// and output projections of attention and the FFN weights, biases included.
void TransformerBlock::AfterInitialize() {
  if (init_gain_ == 1.0f) return;
  const std::vector<std::string> value_and_output = {"w_v.", "w_uv.", "w_o."};
  ScaleParameters(*self_.attention, value_and_output, init_gain_);
  if (cross_.attention != nullptr) ScaleParameters(*cross_.attention, value_and_output, init_gain_);
  ScaleParameters(*ffn_, {""}, init_gain_);
}

int64_t TransformerBlock::KvCacheBytesPerToken(int64_t bytes_per_element) const {
  // Per generated token: the self-attention cache. (A cross-attention cache
  // grows with the source, not with generated tokens.)
  return self_.attention->KvCacheBytesPerToken(bytes_per_element);
}

int64_t TransformerBlock::RecurrentStateBytes(int64_t bytes_per_element) const {
  return self_.attention->RecurrentStateBytes(bytes_per_element);
}

BlockStack::BlockStack(const std::vector<BlockFactory>& layers, float dropout, bool cross_attention,
                       BlockCheckpointing checkpointing)
    : checkpointing_(checkpointing) {
  TVLAB_CHECK(!layers.empty());
  auto* list = AddChild("layers", std::make_unique<ModuleList>());
  for (const BlockFactory& factory : layers)
    blocks_.push_back(list->Append(std::make_unique<TransformerBlock>(factory, dropout, cross_attention)));
  const BlockFactory& last = layers.back();
  if (last.placement->NeedsFinalNorm()) final_norm_ = AddChild("final_norm", last.make_norm());
  value_residual_ = static_cast<bool>(layers.front().make_value_residual);
}

Var BlockStack::Forward(const Var& x, const StackInput& in) const {
  Var h = x;  // (B, T, C)
  ValueResidualState values;  // this pass's first-layer values
  StackInput with_values;
  const StackInput* input = &in;
  if (value_residual_) {
    with_values = in;
    with_values.value_state = &values;
    input = &with_values;
  }
  ActivationRecorder* recorder = ActivationRecorder::Current();  // null but in a coordinate check
  if (recorder) recorder->Record(path() + ".input", h.value());
  // Checkpointed only where backward will run, and never while something
  // watches the intermediates (a probe or a coordinate check would see the
  // recomputation a second time).
  const bool checkpoint = checkpointing_ != BlockCheckpointing::kNone && in.ctx.training && GradEnabled() && recorder == nullptr &&
                          in.probe == nullptr && in.self_caches == nullptr && in.cross_caches == nullptr;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    h = checkpoint ? CheckpointedBlock(i, h, *input) : blocks_[i]->Forward(h, *input, i);
    if (recorder) recorder->Record(path() + ".layers." + std::to_string(i), h.value());
  }
  return final_norm_ ? final_norm_->Forward(h) : h;
}

Var BlockStack::CheckpointedBlock(size_t i, const Var& x, const StackInput& in) const {
  // The encoder output is an input of every decoder block (its gradient
  // leaves through the checkpoint); everything else the block reads is a
  // parameter or a constant. Captured by value: backward runs the block again.
  std::vector<Var> inputs = {x};  // (B, T, C)
  if (in.memory.defined()) inputs.push_back(in.memory);  // (B, S, C)
  const TransformerBlock* block = blocks_[i];
  StackInput kept = in;
  kept.memory = Var();  // the outer tape's memory must not be captured
  return Checkpoint(
      [block, kept, i](const std::vector<Var>& v) {
        StackInput with_memory = kept;
        if (v.size() > 1) with_memory.memory = v[1];
        return block->Forward(v[0], with_memory, i);  // (B, T, C)
      },
      inputs,
      checkpointing_ == BlockCheckpointing::kSelective ? CheckpointPolicy::kKeepMatMuls
                                                       : CheckpointPolicy::kRecomputeAll);
}

int64_t BlockStack::KvCacheBytesPerToken(int64_t bytes_per_element) const {
  int64_t total = 0;
  for (const TransformerBlock* block : blocks_) total += block->KvCacheBytesPerToken(bytes_per_element);
  return total;
}

int64_t BlockStack::KvCacheBytesBound(int64_t bytes_per_element) const {
  int64_t total = 0;
  for (const TransformerBlock* block : blocks_) {
    const int64_t per_token = block->KvCacheBytesPerToken(bytes_per_element);
    if (block->window() <= 0 && per_token > 0) return 0;  // this layer's cache grows with the sequence
    total += block->window() * per_token + block->RecurrentStateBytes(bytes_per_element);
  }
  return total;
}

int64_t BlockStack::RecurrentStateBytes(int64_t bytes_per_element) const {
  int64_t total = 0;
  for (const TransformerBlock* block : blocks_) total += block->RecurrentStateBytes(bytes_per_element);
  return total;
}

}  // namespace tvlab
