#ifndef TVLAB_EXPERIMENTS_HF_HF_ARCHITECTURE_H_
#define TVLAB_EXPERIMENTS_HF_HF_ARCHITECTURE_H_

// The Hugging Face architectures a decoder-only tvlab run maps to, as one
// table that export (hf_export.h) and import (hf_import.h) both read:
//   - which tvlab plugin choices make the architecture (the only place that
//     names them for HF interop), and what to say when one does not fit;
//   - every config.json key, in the order export writes it, with the spec
//     field it comes from (named when an import does not match);
//   - every tensor: the tvlab name, the HF name and how the layout differs.
// Llama (LlamaForCausalLM) is rope + rmsnorm + swiglu with mha/gqa/mqa;
// GPT-2 (GPT2LMHeadModel) is learned positions + layernorm + gelu with mha.
// Both are pre_ln with scaled_dot_product scores and an lm_head without bias.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// The tvlab choices both architectures require.
inline constexpr char kHfNormPlacement[] = "pre_ln";
inline constexpr char kHfScore[] = "scaled_dot_product";
// The task whose token ids are bytes: export writes a byte-level tokenizer.
inline constexpr char kHfByteLevelTask[] = "text_lm";
// Layouts that need their own options read (kv heads), and those with one kv head.
inline constexpr char kHfGroupedLayout[] = "gqa";
inline constexpr char kHfSingleKvLayout[] = "mqa";

// How an HF tensor's layout differs from tvlab's.
enum class HfLayout {
  kSame,
  // The token embedding: tvlab multiplies the looked-up rows by sqrt(C) in
  // float when model.scale_embeddings; HF does not, so the scale is folded in.
  kEmbedding,
  // q and k projections, (heads * hs, C): each head's rows permuted between
  // tvlab's INTERLEAVED RoPE pairs (x[2i], x[2i+1]) and HF's rotate_half
  // (x[i], x[i + hs/2]); nothing to do for HALVES pairing.
  kRopeRows,
  // GPT-2's Conv1D stores (in, out): tvlab's (out, in) transposed; several
  // tvlab tensors (q, k, v) are concatenated along `out`.
  kConv1d,
};

// Which bias goes with a weight.
enum class HfBias {
  kNone,   // none (RMSNorm, embeddings, the head)
  kModel,  // a projection's: tvlab has it when model.bias
  kNorm,   // a LayerNorm's: tvlab has it when the norm's `bias` option is set
};

// One HF tensor ("<hf>.weight", and "<hf>.bias" per `bias`) and the tvlab
// tensor(s) it holds. Per-layer names are relative to the layer prefixes.
struct HfTensor {
  std::vector<std::string> tvlab;  // one, or q, k, v concatenated (kConv1d)
  std::string hf;
  HfLayout layout = HfLayout::kSame;
  HfBias bias = HfBias::kNone;
};

// The numbers config.json is written from.
struct HfConfigValues {
  int64_t vocab = 0, d_model = 0, d_ff = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t max_seq_len = 0;  // model.max_seq_len
  int64_t positions = 0;    // rows of the learned position table
  double norm_eps = 0, rope_base = 0, dropout = 0;
  bool bias = false;             // model.bias
  bool gelu_tanh = false;        // the gelu ffn's tanh_approximation
  bool norm_bias = false;        // the layernorm's `bias` option
  bool interleaved_rope = false;  // RoPE pairing INTERLEAVED (kRopeRows permutes)
  bool tie_embeddings = false;    // model.tie_embeddings: lm_head is wte
};

// One config.json key, `"key": <json value>`.
struct HfConfigKey {
  std::string key;
  std::function<std::string(const HfConfigValues&)> json;
  // Import compares this key with the HF model's (when it has it) and names
  // `spec_field` when they differ.
  bool compared = false;
  std::string spec_field = "the spec";
  // > 0: an HF config may hold null here, meaning this many times the hidden
  // size (GPT-2's n_inner: 4).
  int null_is_times_hidden = 0;
};

struct HfArchitecture {
  std::string name;        // "Llama": in messages
  std::string class_name;  // "LlamaForCausalLM"
  std::string model_type;  // config.json model_type
  // The tvlab plugins that make it; `position` selects the architecture.
  std::string position, norm, ffn;
  std::vector<std::string> layouts;
  // How messages speak of it: "rope" / "uses rope" / "a rope spec".
  std::string with_words, position_words, spec_words;
  std::string layouts_fix;  // what to say for a layout not in `layouts`
  // Fills the option values of `values` (norm eps and bias, RoPE base and
  // pairing, kv heads, the gelu's tanh) from the model's plugin options, their
  // defaults where the spec has none.
  std::function<absl::Status(const ModelSpec&, HfConfigValues*)> read_options;
  // Tensors, in the order export writes them: `first`, then `layer` for each
  // layer, then `last`.
  std::string tvlab_layer, hf_layer;  // "decoder.layers.", "model.layers."
  std::vector<HfTensor> first, layer, last;
  // Every bias of `layer` and `last` is in the HF model; one the tvlab model
  // lacks is written as zeros, which is the same function (GPT-2).
  bool every_bias = false;
  std::vector<HfConfigKey> config;
};

// Llama, then GPT-2.
const std::vector<HfArchitecture>& HfArchitectures();
// The architecture whose `position` is `position`, or null.
const HfArchitecture* HfArchitectureFor(const std::string& position);
// The other architecture (messages say what it would need).
const HfArchitecture& OtherHfArchitecture(const HfArchitecture& arch);

// OK when every layer is alike; a spec with model.layer_overrides is refused
// (Llama and GPT-2 configs give every layer the same attention, position,
// norm and FFN), naming `what` ("Hugging Face export", "--init_from").
absl::Status CheckLayersAlike(const ModelSpec& m, const std::string& what);

// config.json as export writes it: every key of `arch.config`, in order.
std::string HfConfigJson(const HfArchitecture& arch, const HfConfigValues& values);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_HF_HF_ARCHITECTURE_H_
