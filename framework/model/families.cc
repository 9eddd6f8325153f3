#include "framework/model/families.h"

#include <cmath>

#include "framework/autograd/ops.h"
#include "framework/core/check.h"
#include "framework/model/memory_tokens.h"
#include "framework/model/multi_token.h"

namespace tvlab {
namespace {

// Causal mask for new queries at [offset, offset + T) over offset + T keys,
// with key padding when rows have lengths, and the documents of packed rows
// (B, T) when given (a whole sequence: offset 0).
AttentionMask DecoderMask(int64_t offset, const std::vector<int64_t>& lengths,
                          const std::vector<int32_t>& documents, int64_t b, int64_t t) {
  AttentionMask mask = CausalMask(offset);
  mask.key_lengths = lengths;
  if (!documents.empty()) {
    TVLAB_CHECK(offset == 0 && static_cast<int64_t>(documents.size()) == b * t)
        << "documents cover whole rows of a batch, not decoding steps";
    SetDocuments(&mask, documents, b, t);
  }
  return mask;
}

// Per-row key counts with `n` memory tokens in front (empty stays empty).
std::vector<int64_t> WithMemory(std::vector<int64_t> lengths, int64_t n) {
  for (int64_t& l : lengths) l += n;
  return lengths;
}

// A bidirectional stack over x (B, T, C) whose rows have `lengths` real
// tokens (empty = all) and packed `documents` (empty = none), with the
// stack's memory tokens in front when `memory` is set -> (B, T, C).
Var EncodeWith(const BlockStack& stack, const MemoryTokens* memory, Var x, const std::vector<int64_t>& lengths,
               const std::vector<int32_t>& documents, StackInput in) {
  const int64_t n = memory != nullptr ? memory->count() : 0;
  if (n > 0) {
    TVLAB_CHECK(documents.empty()) << "validation refuses model.memory_tokens with packed documents";
    x = memory->Prepend(x);  // (B, N + T, C)
  }
  in.self_mask = KeyPaddingMask(WithMemory(lengths, n));  // every key visible without lengths
  SetDocuments(&in.self_mask, documents, x.dim(0), x.dim(1));  // packed rows
  Var h = stack.Forward(x, in);
  return n > 0 ? memory->Strip(h) : h;  // (B, T, C)
}

// Base of the three families: owns the "embedding" and "position" children
// (so parameters are named embedding.weight and position.*).
class FamilyModel : public Model {
 protected:
  TokenEmbedder AddEmbedder(const ModelSpec& spec, int64_t vocab,
                            std::unique_ptr<PositionEncoding> position) {
    TokenEmbedder e;
    e.d_model = spec.d_model();
    e.scale = spec.scale_embeddings();
    e.table = AddChild("embedding", std::make_unique<nn::Embedding>(vocab, spec.d_model()));
    e.position = AddChild("position", std::move(position));
    return e;
  }
  // The output head "head": its own weight, or with model.tie_embeddings
  // the embedding table's (then only a bias of its own, if any).
  // Its input is multiplied by `input_scale` (StackFactories::head_input_scale).
  nn::Linear* AddHead(const ModelSpec& spec, const TokenEmbedder& e, int64_t outputs, float input_scale) {
    nn::Linear* head;
    if (!spec.tie_embeddings()) {
      head = AddChild("head", std::make_unique<nn::Linear>(spec.d_model(), outputs, spec.head_bias()));
    } else {
      TVLAB_CHECK(e.table->vocab() == outputs) << "validation ensures a tied head produces the vocabulary";
      head = AddChild("head", std::make_unique<nn::Linear>(e.table->weight(), spec.head_bias()));
    }
    head->set_input_scale(input_scale);
    return head;
  }
  // model.memory_tokens of the stack `stack` ("encoder", "decoder"): the
  // child "<stack>_memory_tokens", or null when the count is 0.
  const MemoryTokens* AddMemoryTokens(const ModelSpec& spec, const std::string& stack) {
    if (spec.memory_tokens().count() <= 0) return nullptr;
    return AddChild(stack + "_memory_tokens",
                    std::make_unique<MemoryTokens>(spec.memory_tokens().count(), spec.d_model()));
  }
};

// Encoder-only: bidirectional stack over the whole input.
class EncoderOnlyModel : public FamilyModel {
 public:
  EncoderOnlyModel(const ModelSpec& spec, int64_t vocab, int64_t outputs,
                   const StackFactories& stacks, std::unique_ptr<PositionEncoding> position)
      : pooling_(spec.pooling()) {
    embedding_ = AddEmbedder(spec, vocab, std::move(position));
    encoder_ = AddChild("encoder", std::make_unique<BlockStack>(stacks.encoder, spec.dropout(), false,
                                                         stacks.checkpoint_blocks));
    memory_ = AddMemoryTokens(spec, "encoder");
    head_ = AddHead(spec, embedding_, outputs, stacks.head_input_scale);
  }

  Var Forward(const Batch& batch, const ForwardContext& ctx,
              const AttentionProbe* probe) const override {
    Var x = embedding_.Forward(batch.inputs, batch.batch, batch.length, 0);  // (B, T, C)
    StackInput in;
    in.position = embedding_.position;
    in.ctx = ctx;
    in.probe = probe;
    Var h = EncodeWith(*encoder_, memory_, x, batch.lengths, batch.documents, in);  // (B, T, C)
    if (pooling_ == ModelSpec::NONE) return head_->Forward(h);  // (B, T, V)
    Var pooled = pooling_ == ModelSpec::FIRST_TOKEN
                     ? Slice(h, 1, 0, 1)                                    // (B, 1, C)
                     : Reshape(MeanOverTokens(h, batch), {batch.batch, 1, h.dim(2)});
    return head_->Forward(pooled);  // (B, 1, classes)
  }

  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const override {
    return encoder_->KvCacheBytesPerToken(bytes_per_element);
  }

 private:
  // Mean of each row's real tokens: (B, T, C) -> (B, C).
  static Var MeanOverTokens(const Var& h, const Batch& batch) {
    // Built from the batch's lengths on the host and copied over (an edge).
    std::vector<float> weights(batch.batch * batch.length, 0.0f);  // (B, 1, T)
    for (int64_t r = 0; r < batch.batch; ++r) {
      int64_t n = batch.lengths.empty() ? batch.length : batch.lengths[r];
      for (int64_t t = 0; t < n; ++t) weights[r * batch.length + t] = 1.0f / n;
    }
    Var w(Tensor::FromVector({batch.batch, 1, batch.length}, weights));
    return Reshape(MatMul(w, h), {batch.batch, h.dim(2)});  // (B,1,T)x(B,T,C)
  }


  ModelSpec::Pooling pooling_;
  TokenEmbedder embedding_;
  BlockStack* encoder_;
  const MemoryTokens* memory_ = nullptr;  // model.memory_tokens, or null
  nn::Linear* head_;
};

// Shared by the decoder-only model and the decoder of an encoder-decoder:
// a causal stack over target tokens with a next-token head (both owned by
// the model, named "decoder" and "head").
struct CausalDecoder {
  TokenEmbedder embedder;
  const BlockStack* stack = nullptr;
  const nn::Linear* head = nullptr;
  const MemoryTokens* memory_tokens = nullptr;  // model.memory_tokens, or null
  // One pass of the stack: its output h (B, M + T, C), M = the memory
  // rows it holds in front (N on a pass from offset 0, else 0), and the
  // stack input it ran with.
  struct Pass {
    Var h;
    int64_t memory_rows = 0;
    StackInput in;
  };
  // tokens (B, T) at positions [offset, offset + T); documents (B, T) of
  // packed rows, or empty. With N memory tokens, a pass from offset 0
  // prepends them (the stack sees N + T rows; a cached decoding's first
  // step so puts them into the caches), and a later cached step sits at
  // attention position N + offset.
  Pass Run(const std::vector<int32_t>& tokens, int64_t b, int64_t t, int64_t offset,
           const std::vector<int64_t>& lengths, StackInput in, const std::vector<int32_t>& documents) const {
    Var x = embedder.Forward(tokens, b, t, offset);  // (B, T, C)
    const int64_t n = memory_tokens != nullptr ? memory_tokens->count() : 0;
    const bool prepend = n > 0 && offset == 0;
    if (prepend) {
      TVLAB_CHECK(documents.empty()) << "validation refuses model.memory_tokens with packed documents";
      x = memory_tokens->Prepend(x);  // (B, N + T, C)
    }
    const int64_t at = offset == 0 ? 0 : n + offset;  // attention position of x's first row
    in.self_mask = DecoderMask(at, WithMemory(lengths, n), documents, b, x.dim(1));
    in.position = embedder.position;
    in.position_offset = at;
    Var h = stack->Forward(x, in);  // (B, M + T, C)
    return Pass{h, prepend ? n : 0, in};
  }
  // The real tokens' rows of y (B, M + T, ...) -> (B, T, ...).
  static Var Real(const Var& y, int64_t memory_rows) {
    return memory_rows > 0 ? Slice(y, 1, memory_rows, y.dim(1) - memory_rows) : y;
  }
  // -> logits (B, T, V).
  Var Forward(const std::vector<int32_t>& tokens, int64_t b, int64_t t, int64_t offset,
              const std::vector<int64_t>& lengths, StackInput in,
              const std::vector<int32_t>& documents = {}) const {
    const Pass pass = Run(tokens, b, t, offset, lengths, in, documents);
    return head->Forward(Real(pass.h, pass.memory_rows));  // (B, T, V)
  }
  // A fresh decoding state with one cache per layer (two with cross-attention).
  DecodeState NewState(int64_t batch, bool use_cache, bool cross_attention) const {
    DecodeState state;
    state.batch = batch;
    state.use_cache = use_cache;
    state.self_caches.resize(stack->num_layers());
    if (cross_attention) state.cross_caches.resize(stack->num_layers());
    return state;
  }
};

// Runs one decode step through `decoder`, with or without the caches.
Var StepDecoder(const CausalDecoder& decoder, DecodeState* state, const std::vector<int32_t>& tokens,
                int64_t t_new, StackInput in) {
  const int64_t b = state->batch;
  TVLAB_CHECK_EQ(static_cast<int64_t>(tokens.size()), b * t_new);
  Var logits;
  if (state->use_cache) {
    in.self_caches = &state->self_caches;
    if (in.memory.defined()) in.cross_caches = &state->cross_caches;
    logits = decoder.Forward(tokens, b, t_new, state->offset, {}, in);
  } else {
    // Recompute the whole prefix: append to the history and keep the tail.
    const int64_t total = state->offset + t_new;
    std::vector<int32_t> all(b * total);
    for (int64_t r = 0; r < b; ++r) {
      std::copy(state->history.begin() + r * state->offset, state->history.begin() + (r + 1) * state->offset,
                all.begin() + r * total);
      std::copy(tokens.begin() + r * t_new, tokens.begin() + (r + 1) * t_new,
                all.begin() + r * total + state->offset);
    }
    state->history = all;
    if (in.memory.defined()) in.cross_mask = KeyPaddingMask(state->source_lengths);
    Var full = decoder.Forward(all, b, total, 0, {}, in);  // (B, total, V)
    logits = Slice(full, 1, state->offset, t_new);
  }
  state->offset += t_new;
  return logits;
}

class DecoderOnlyModel : public FamilyModel {
 public:
  DecoderOnlyModel(const ModelSpec& spec, int64_t vocab, const StackFactories& stacks,
                   std::unique_ptr<PositionEncoding> position) {
    decoder_.embedder = AddEmbedder(spec, vocab, std::move(position));
    decoder_.stack = AddChild("decoder", std::make_unique<BlockStack>(stacks.decoder, spec.dropout(), false,
                                                         stacks.checkpoint_blocks));
    decoder_.memory_tokens = AddMemoryTokens(spec, "decoder");
    decoder_.head = AddHead(spec, decoder_.embedder, vocab, stacks.head_input_scale);
    if (spec.multi_token_prediction().num_tokens() >= 2)  // multi_token.h
      mtp_ = AddChild("mtp", std::make_unique<MultiTokenHeads>(spec.multi_token_prediction(), spec.d_model(), vocab,
                                                               spec.head_bias(), stacks.decoder.back(),
                                                               spec.dropout(), decoder_.head));
  }
  // With multi-token prediction, a collecting (training) forward also runs
  // the extra heads and emits their losses; the logits are the main head's.
  Var Forward(const Batch& batch, const ForwardContext& ctx,
              const AttentionProbe* probe) const override {
    if (mtp_ != nullptr && CollectingAuxiliaryOutputs()) {
      std::vector<Var> all = AllHeads(batch, ctx, probe);
      mtp_->EmitLosses(std::vector<Var>(all.begin() + 1, all.end()), batch);
      return all.front();
    }
    StackInput in;
    in.ctx = ctx;
    in.probe = probe;
    return decoder_.Forward(batch.inputs, batch.batch, batch.length, 0, batch.lengths, in,
                            batch.documents);
  }
  int64_t NumExtraHeads() const override { return mtp_ != nullptr ? mtp_->num_extra() : 0; }
  std::vector<Var> ForwardAllHeads(const Batch& batch, const ForwardContext& ctx) const override {
    return AllHeads(batch, ctx, nullptr);
  }
  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const override {
    return decoder_.stack->KvCacheBytesPerToken(bytes_per_element);
  }
  int64_t KvCacheBytesBound(int64_t bytes_per_element) const override {
    return decoder_.stack->KvCacheBytesBound(bytes_per_element);
  }
  int64_t RecurrentStateBytes(int64_t bytes_per_element) const override {
    return decoder_.stack->RecurrentStateBytes(bytes_per_element);
  }
  bool SupportsDecoding() const override { return true; }
  DecodeState BeginDecoding(const Batch& batch, bool use_cache) const override {
    return decoder_.NewState(batch.batch, use_cache, /*cross_attention=*/false);
  }
  Var DecodeStep(DecodeState* state, const std::vector<int32_t>& tokens, int64_t t_new) const override {
    return StepDecoder(decoder_, state, tokens, t_new, StackInput());
  }

 private:
  // The main head's logits, then head k = 2 .. n's, each (B, T, V).
  std::vector<Var> AllHeads(const Batch& batch, const ForwardContext& ctx, const AttentionProbe* probe) const {
    StackInput in;
    in.ctx = ctx;
    in.probe = probe;
    CausalDecoder::Pass pass = decoder_.Run(batch.inputs, batch.batch, batch.length, 0, batch.lengths, in,
                                            batch.documents);
    std::vector<Var> all = {decoder_.head->Forward(CausalDecoder::Real(pass.h, pass.memory_rows))};
    if (mtp_ == nullptr) return all;
    pass.in.probe = nullptr;  // the probe records the trunk's layers only
    for (const Var& y : mtp_->Logits(pass.h, pass.in)) all.push_back(CausalDecoder::Real(y, pass.memory_rows));
    return all;
  }

  CausalDecoder decoder_;
  const MultiTokenHeads* mtp_ = nullptr;  // model.multi_token_prediction, or null
};

class EncoderDecoderModel : public FamilyModel {
 public:
  EncoderDecoderModel(const ModelSpec& spec, int64_t vocab, const StackFactories& stacks,
                      std::unique_ptr<PositionEncoding> position) {
    // One embedding table for source and target (a shared vocabulary).
    decoder_.embedder = AddEmbedder(spec, vocab, std::move(position));
    encoder_ = AddChild("encoder", std::make_unique<BlockStack>(stacks.encoder, spec.dropout(), false,
                                                         stacks.checkpoint_blocks));
    decoder_.stack = AddChild("decoder", std::make_unique<BlockStack>(stacks.decoder, spec.dropout(), true,
                                                         stacks.checkpoint_blocks));
    encoder_memory_ = AddMemoryTokens(spec, "encoder");
    decoder_.memory_tokens = AddMemoryTokens(spec, "decoder");
    decoder_.head = AddHead(spec, decoder_.embedder, vocab, stacks.head_input_scale);
  }


  Var Forward(const Batch& batch, const ForwardContext& ctx,
              const AttentionProbe* probe) const override {
    StackInput in;
    in.ctx = ctx;
    in.probe = probe;
    in.memory = Encode(batch, ctx, probe);  // (B, S, C)
    in.cross_mask = KeyPaddingMask(batch.source_lengths);  // (empty: every source key)
    TVLAB_CHECK(batch.documents.empty()) << "packed documents are a decoder-only task's";
    return decoder_.Forward(batch.inputs, batch.batch, batch.length, 0, batch.lengths, in);
  }
  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const override {
    return decoder_.stack->KvCacheBytesPerToken(bytes_per_element);
  }
  int64_t KvCacheBytesBound(int64_t bytes_per_element) const override {
    return decoder_.stack->KvCacheBytesBound(bytes_per_element);
  }
  int64_t RecurrentStateBytes(int64_t bytes_per_element) const override {
    return decoder_.stack->RecurrentStateBytes(bytes_per_element);
  }
  bool SupportsDecoding() const override { return true; }
  DecodeState BeginDecoding(const Batch& batch, bool use_cache) const override {
    DecodeState state = decoder_.NewState(batch.batch, use_cache, /*cross_attention=*/true);
    state.memory = Encode(batch, ForwardContext{}, nullptr);
    state.source_lengths = batch.source_lengths;
    return state;
  }
  Var DecodeStep(DecodeState* state, const std::vector<int32_t>& tokens, int64_t t_new) const override {
    StackInput in;
    in.memory = state->memory;
    in.cross_mask = KeyPaddingMask(state->source_lengths);
    return StepDecoder(decoder_, state, tokens, t_new, in);
  }

 private:
  Var Encode(const Batch& batch, const ForwardContext& ctx, const AttentionProbe* probe) const {
    Var x = decoder_.embedder.Forward(batch.source, batch.batch, batch.source_length, 0);  // (B, S, C)
    StackInput in;
    in.position = decoder_.embedder.position;
    in.ctx = ctx;
    in.probe = probe;
    return EncodeWith(*encoder_, encoder_memory_, x, batch.source_lengths, {}, in);  // (B, S, C)
  }

  BlockStack* encoder_;
  const MemoryTokens* encoder_memory_ = nullptr;  // model.memory_tokens, or null
  CausalDecoder decoder_;
};

}  // namespace

Var TokenEmbedder::Forward(const std::vector<int32_t>& ids, int64_t batch, int64_t length,
                           int64_t offset) const {
  Var x = table->Forward(ids, batch, length);  // (B, T, C)
  if (scale) x = Scale(x, std::sqrt(static_cast<float>(d_model)));
  return position->AddToEmbeddings(x, offset);
}

std::unique_ptr<Model> MakeEncoderOnly(const ModelSpec& spec, int64_t vocab, int64_t outputs,
                                       const StackFactories& stacks,
                                       std::unique_ptr<PositionEncoding> position) {
  return std::make_unique<EncoderOnlyModel>(spec, vocab, outputs, stacks, std::move(position));
}
std::unique_ptr<Model> MakeDecoderOnly(const ModelSpec& spec, int64_t vocab,
                                       const StackFactories& stacks,
                                       std::unique_ptr<PositionEncoding> position) {
  return std::make_unique<DecoderOnlyModel>(spec, vocab, stacks, std::move(position));
}
std::unique_ptr<Model> MakeEncoderDecoder(const ModelSpec& spec, int64_t vocab,
                                          const StackFactories& stacks,
                                          std::unique_ptr<PositionEncoding> position) {
  return std::make_unique<EncoderDecoderModel>(spec, vocab, stacks, std::move(position));
}

}  // namespace tvlab
