#ifndef TVLAB_EXPERIMENTS_HF_HF_EXPORT_H_
#define TVLAB_EXPERIMENTS_HF_HF_EXPORT_H_

// A finished run as a Hugging Face `transformers` model directory
// (config.json + model.safetensors), for the variant combinations that are
// exactly an HF architecture (docs/interop.md; the mapping itself, shared with
// import, is the table of hf_architecture.h):
//
//   Llama  (LlamaForCausalLM): DECODER_ONLY, pre_ln, rmsnorm, rope, swiglu,
//          mha/gqa/mqa, scaled_dot_product; model.bias maps to
//          attention_bias and mlp_bias. INTERLEAVED RoPE pairs are permuted to
//          HF's rotate_half layout (rows of q and k, per head); HALVES
//          needs no permutation.
//   GPT-2  (GPT2LMHeadModel): DECODER_ONLY, pre_ln, layernorm, learned
//          positions, gelu (tanh_approximation -> "gelu_new", exact ->
//          "gelu"), mha, scaled_dot_product. Linear weights are transposed
//          to GPT-2's Conv1D (in, out) layout and q, k, v concatenated into
//          c_attn; a run without biases (model.bias false, layernorm bias
//          false) gets zero biases, which is the same function.
//
// Both need model.head_bias false (HF's lm_head has no bias) and get
// tie_word_embeddings false (tvlab never ties). model.scale_embeddings is
// folded into the exported token embedding (the same float product).
// Any other combination is an error naming the component with no HF
// equivalent and what would fit.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/schema/experiment.pb.h"
#include "framework/tensor/tensor.h"

namespace tvlab {

struct HfModel {
  std::string architecture;  // "LlamaForCausalLM" or "GPT2LMHeadModel"
  std::string config_json;
  std::vector<std::pair<std::string, Tensor>> tensors;  // HF names, HF layouts
  // Byte-level tasks (text_lm: token id = byte value): tokenizer.json, a
  // GPT-2 style ByteLevel BPE with the 256 bytes and no merges, and
  // tokenizer_config.json, so AutoTokenizer round-trips text. Empty for
  // tasks with their own vocabularies (digits, symbols).
  std::string tokenizer_json;
  std::string tokenizer_config_json;
};

// Maps a run's resolved spec and its model.safetensors tensors (tvlab names),
// with the byte-level tokenizer when the task is byte-level.
absl::StatusOr<HfModel> ToHuggingFace(const Experiment& spec,
                                      const std::map<std::string, Tensor>& weights);

// The model alone (no tokenizer files): what import checks itself against.
absl::StatusOr<HfModel> ModelToHuggingFace(const ModelSpec& model,
                                           const std::map<std::string, Tensor>& weights);

// Writes out_dir/config.json, out_dir/model.safetensors and the tokenizer
// files when there are some (creating out_dir).
absl::Status WriteHuggingFace(const HfModel& model, const std::string& out_dir);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_HF_HF_EXPORT_H_
