#ifndef TVLAB_FRAMEWORK_MODEL_MODEL_H_
#define TVLAB_FRAMEWORK_MODEL_MODEL_H_

// A Transformer of one of three families, assembled from plugins.
// BuildModel() is the only place a (validated) spec becomes plugin instances.
//
//   encoder-only     bidirectional stack; a head per token, or a pooled
//                    classification head (model.pooling)
//   decoder-only     causal stack; next-token head; incremental decoding
//   encoder-decoder  bidirectional encoder, causal decoder with
//                    cross-attention, teacher forcing; incremental decoding
//                    (cross-attention keys/values computed once per source)

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/attention/kv_cache.h"
#include "framework/autograd/var.h"
#include "framework/interfaces/task.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/nn/module.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Incremental decoding state of a batch of rows.
struct DecodeState {
  int64_t batch = 0;
  int64_t offset = 0;            // tokens fed so far
  bool use_cache = true;
  std::vector<KvCache> self_caches;   // one per decoder layer
  std::vector<KvCache> cross_caches;  // encoder-decoder only
  Var memory;                         // (B, S, C) encoder output
  std::vector<int64_t> source_lengths;
  std::vector<int32_t> history;       // (B, offset) every token fed (no-cache path)
};

class Model : public Module {
 public:
  // Logits for the batch: (B, T, V) per token, or (B, 1, classes) for a
  // pooled classifier.
  virtual Var Forward(const Batch& batch, const ForwardContext& ctx,
                      const AttentionProbe* probe = nullptr) const = 0;
  // KV-cache bytes one generated token adds, over all layers.
  virtual int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const = 0;
  // The most KV-cache bytes one sequence's decoding state ever holds, over
  // all layers, when every self-attention layer has a window
  // (model.attention.window: a cache keeps at most W tokens); 0 when the
  // cache grows with the sequence (some layer sees every key).
  virtual int64_t KvCacheBytesBound(int64_t bytes_per_element) const {
    (void)bytes_per_element;
    return 0;
  }
  // Bytes of the recurrent mixers' fixed decoding state of one sequence,
  // over all layers (AttentionLayout::RecurrentStateBytes); 0 without mixer
  // layers. Constant in the tokens generated.
  virtual int64_t RecurrentStateBytes(int64_t bytes_per_element) const {
    (void)bytes_per_element;
    return 0;
  }

  // Multi-token prediction (model.multi_token_prediction, decoder-only):
  // the extra heads (n - 1; 0 without), and one forward's logits of the
  // main head then head k = 2 .. n, each (B, T, V) (just the main head's
  // without). Outside a collecting forward no loss is emitted.
  virtual int64_t NumExtraHeads() const { return 0; }
  virtual std::vector<Var> ForwardAllHeads(const Batch& batch, const ForwardContext& ctx) const {
    return {Forward(batch, ctx)};
  }

  // Generation (decoder-only and encoder-decoder).
  virtual bool SupportsDecoding() const { return false; }
  // Starts `batch` rows; an encoder-decoder encodes batch.source once here.
  virtual DecodeState BeginDecoding(const Batch& batch, bool use_cache) const;
  // Feeds t_new tokens per row (row-major (B, t_new)) -> logits (B, t_new, V).
  virtual Var DecodeStep(DecodeState* state, const std::vector<int32_t>& tokens,
                         int64_t t_new) const;
  // Keeps rows `rows` of the state in that order (beam search).
  static void SelectRows(DecodeState* state, const std::vector<int64_t>& rows);
};

// Requires: `spec` passed ValidateExperiment. `output_size` is the head's
// width (the task's num_outputs()); 0 means vocab_size. Parameters are
// initialised from spec.seed().
absl::StatusOr<std::unique_ptr<Model>> BuildModel(const Experiment& spec, int64_t vocab_size,
                                                  int64_t output_size = 0);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_MODEL_H_
