#ifndef TVLAB_FRAMEWORK_MODEL_DECODING_H_
#define TVLAB_FRAMEWORK_MODEL_DECODING_H_

// Generation for decoder-only and encoder-decoder models: greedy,
// temperature / top-k sampling and beam search (GNMT length penalty), all on
// the model's incremental DecodeStep (KV cache on by default; cross-attention
// keys and values are computed once per source).

#include <cstdint>
#include <vector>

#include "framework/core/problems.h"
#include "framework/model/model.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Continues `prefix` (fed to the decoder first) until EOS,
// spec.max_new_tokens(), or the decoder's positions run out (`max_positions`
// = model.max_seq_len: the decoder never sees a position past it). `source`
// (content tokens + EOS) is the encoder input of an encoder-decoder model and
// is ignored otherwise. `stream` keys the sampling randomness. Returns the
// generated tokens without EOS.
std::vector<int32_t> Generate(const Model& model, const std::vector<int32_t>& source,
                              const std::vector<int32_t>& prefix, const DecodingSpec& spec,
                              int64_t max_positions, uint64_t stream);

// The decoder prefix and encoder source of a sequence-pair example for the
// model's family (see framework/data/sequence_pairs.h for the packing).
void PromptFor(ModelSpec::Family family, const std::vector<int32_t>& source_tokens,
               std::vector<int32_t>* source, std::vector<int32_t>* prefix);

// Adds every problem of a DecodingSpec found at `path` (e.g.
// "eval.decoding") to `problems`.
void ValidateDecodingSpec(const DecodingSpec& spec, const std::string& path, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_DECODING_H_
