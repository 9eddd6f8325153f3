#ifndef TVLAB_FRAMEWORK_MODEL_BLOCK_STACK_H_
#define TVLAB_FRAMEWORK_MODEL_BLOCK_STACK_H_

// A stack of Transformer blocks. Each block has a self-attention sublayer,
// optionally a cross-attention sublayer (decoder of an encoder-decoder), and
// an FFN sublayer; each sublayer sits inside the placement plugin's residual
// wrapper with dropout on its output (as torch.nn.TransformerEncoderLayer /
// TransformerDecoderLayer).

#include <memory>
#include <vector>

#include "framework/attention/attention_extras.h"
#include "framework/attention/kv_cache.h"
#include "framework/backend/attention_mask.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/attention_score.h"
#include "framework/interfaces/ffn.h"
#include "framework/interfaces/norm_placement.h"
#include "framework/interfaces/normalization.h"
#include "framework/interfaces/position_encoding.h"
#include "framework/model/value_residual.h"
#include "framework/nn/layers.h"
#include "framework/nn/module.h"

namespace tvlab {

// Everything one block needs, made by BuildModel from the registries and
// the layer's spec (LayerExperiment: per-layer patterns).
struct BlockFactory {
  std::function<std::unique_ptr<AttentionLayout>()> make_layout;
  std::function<std::unique_ptr<AttentionScore>()> make_score;
  std::function<std::unique_ptr<Ffn>()> make_ffn;
  std::function<std::unique_ptr<Normalization>()> make_norm;
  const NormPlacement* placement = nullptr;
  // model.attention.window: self-attention sees the `window` nearest keys
  // (attention_mask.h); 0 = every key. Cross-attention is never windowed.
  int64_t window = 0;
  // The attention options of each attention sublayer (attention_extras.h);
  // empty when none is on, so such a model has no extra parameters.
  std::function<std::unique_ptr<AttentionExtras>()> make_attention_extras;
  // Set when the layer's position plugin is not the model's (a per-layer
  // override): the block then owns its own ("position") and its attention
  // uses it instead of StackInput::position.
  std::function<std::unique_ptr<PositionEncoding>()> make_position;
  // model.value_residual: the block's part (value_residual.h); unset = off.
  std::function<std::unique_ptr<ValueResidual>()> make_value_residual;
};

// train.activation_checkpointing in training (autograd/checkpoint.h): none;
// each block rerun in backward from its input (BLOCK, kRecomputeAll); or
// rerun keeping its matrix products and attention outputs (SELECTIVE,
// kKeepMatMuls).
enum class BlockCheckpointing { kNone, kBlock, kSelective };

// A model's blocks, one factory per layer of each stack (empty for a stack
// the family does not have).
struct StackFactories {
  std::vector<BlockFactory> encoder;
  std::vector<BlockFactory> decoder;
  // Multiplies the output head's input (the init plugin's HeadInputScale;
  // µP: base_width / width); 1 = none.
  float head_input_scale = 1.0f;
  // train.activation_checkpointing (BlockStack's `checkpointing`).
  BlockCheckpointing checkpoint_blocks = BlockCheckpointing::kNone;
};

// What one pass through a stack sees besides its input.
struct StackInput {
  AttentionMask self_mask;          // over T_total keys (cached ones included)
  const PositionEncoding* position = nullptr;
  ForwardContext ctx;
  const AttentionProbe* probe = nullptr;
  int64_t position_offset = 0;      // position of the input's first token
  std::vector<KvCache>* self_caches = nullptr;   // one per layer, or null
  Var memory;                       // (B, S, C) encoder output, or undefined
  AttentionMask cross_mask;         // over the S source keys
  std::vector<KvCache>* cross_caches = nullptr;  // one per layer, or null
  // The value residual's first-layer values in this pass (BlockStack::Forward
  // sets it when its blocks mix values); null = none.
  ValueResidualState* value_state = nullptr;
};

class TransformerBlock : public Module {
 public:
  TransformerBlock(const BlockFactory& factory, float dropout, bool cross_attention);
  // x (B, T, C) -> (B, T, C); `layer` indexes the stack's caches.
  Var Forward(const Var& x, const StackInput& in, size_t layer) const;
  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const;
  int64_t RecurrentStateBytes(int64_t bytes_per_element) const;
  int64_t window() const { return window_; }
  // Applies the placement's SublayerInitGain (DeepNorm's beta) to the
  // initial values; a no-op at gain 1.
  void AfterInitialize() override;

 private:
  struct Sublayer {
    ResidualWrapper* residual = nullptr;
    AttentionLayout* attention = nullptr;
    AttentionScore* score = nullptr;
    nn::Dropout* dropout = nullptr;
    AttentionExtras* extras = nullptr;  // nullptr = no attention option on
  };
  void AddAttention(const std::string& name, const BlockFactory& factory, float dropout,
                    Sublayer* out);
  // `position`: the stack's position plugin as this layer sees it (AtSite).
  Var Attend(const Sublayer& s, const Var& x, const StackInput& in,
             const PositionEncoding* position, const Var& memory, const AttentionMask& mask,
             KvCache* cache, int64_t offset) const;

  Sublayer self_;
  Sublayer cross_;  // attention == nullptr when absent
  int64_t window_;  // of the self-attention mask (BlockFactory::window)
  float init_gain_ = 1.0f;  // NormPlacement::SublayerInitGain
  const PositionEncoding* own_position_ = nullptr;  // the layer's own, or null
  const ValueResidual* value_residual_ = nullptr;   // model.value_residual, or null
  ResidualWrapper* ffn_residual_;
  Ffn* ffn_;
  nn::Dropout* ffn_dropout_;
};

class BlockStack : public Module {
 public:
  // One block per factory, in order; the final norm (where the last
  // block's placement needs one) from the last factory. `checkpointing`
  // (train.activation_checkpointing): in training, BLOCK keeps only each
  // block's inputs and reruns the block in backward; SELECTIVE keeps its
  // matrix products too and reruns only the rest (autograd/checkpoint.h).
  BlockStack(const std::vector<BlockFactory>& layers, float dropout, bool cross_attention,
             BlockCheckpointing checkpointing = BlockCheckpointing::kNone);
  // x (B, T, C) -> (B, T, C), final norm included where the placement needs it.
  Var Forward(const Var& x, const StackInput& in) const;
  int64_t num_layers() const { return static_cast<int64_t>(blocks_.size()); }
  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const;
  // Model::KvCacheBytesBound of this stack's self-attention caches.
  int64_t KvCacheBytesBound(int64_t bytes_per_element) const;
  // Model::RecurrentStateBytes of this stack.
  int64_t RecurrentStateBytes(int64_t bytes_per_element) const;

 private:
  // Block i under autograd Checkpoint: x (B, T, C) -> (B, T, C).
  Var CheckpointedBlock(size_t i, const Var& x, const StackInput& in) const;

  std::vector<TransformerBlock*> blocks_;
  Normalization* final_norm_ = nullptr;
  BlockCheckpointing checkpointing_ = BlockCheckpointing::kNone;
  bool value_residual_ = false;  // the blocks mix values (model.value_residual)
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_BLOCK_STACK_H_
