#include "experiments/hf/hf_export.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/hf/hf_architecture.h"
#include "experiments/hf/hf_tensors.h"
#include "framework/autograd/var.h"
#include "framework/core/status_macros.h"
#include "framework/train/safetensors.h"

namespace tvlab {
namespace {

class Weights {
 public:
  explicit Weights(const std::map<std::string, Tensor>& w) : w_(w) {}
  absl::StatusOr<Tensor> Get(const std::string& name) const {
    auto it = w_.find(name);
    if (it == w_.end()) {
      return absl::NotFoundError(absl::StrCat("model.safetensors has no tensor '", name,
                                              "', which the spec's model needs; is it this run's?"));
    }
    return it->second;
  }

 private:
  const std::map<std::string, Tensor>& w_;
};

absl::Status NoEquivalent(const std::string& what, const std::string& target, const std::string& fix) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, " has no equivalent in Hugging Face ", target, "; ", fix));
}

// "Llama or GPT-2".
std::string EveryArchitecture() {
  std::vector<std::string> names;
  for (const HfArchitecture& a : HfArchitectures()) names.push_back(a.name);
  return absl::StrJoin(names, " or ");
}

// Decoder-only: what export covers.
absl::Status CheckFamily(const ModelSpec& m) {
  if (m.family() == ModelSpec::ENCODER_ONLY) {
    // What BERT computes that no tvlab encoder-only spec does (token-type
    // embeddings are no obstacle: type 0 everywhere, exported as zeros, would
    // be exact).
    return absl::FailedPreconditionError(absl::StrCat(
        "model.family ENCODER_ONLY has no equivalent in Hugging Face BERT: BERT normalizes the sum "
        "of its word, position and token-type embeddings with a LayerNorm (embeddings.LayerNorm) "
        "before the first layer, and tvlab's encoder-only model has no norm on its embeddings "
        "(post_ln normalizes after each sublayer only, pre_ln uses a final norm instead)",
        m.pooling() != ModelSpec::NONE
            ? "; and pooled classification in BERT goes through its pooler (a dense layer and tanh on "
              "the first token), which tvlab's pooling does not have"
            : "",
        ". Export covers DECODER_ONLY runs (Llama, GPT-2)"));
  }
  if (m.family() != ModelSpec::DECODER_ONLY) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model.family ", ModelSpec::Family_Name(m.family()),
        ": Hugging Face export covers DECODER_ONLY runs (Llama, GPT-2); encoder-decoder (T5/BART) "
        "export is not implemented"));
  }
  return absl::OkStatus();
}

// What both architectures require.
absl::Status CheckCommon(const ModelSpec& m) {
  if (m.norm().placement() != kHfNormPlacement)
    return NoEquivalent(absl::StrCat("model.norm.placement '", m.norm().placement(), "'"), EveryArchitecture(),
                        absl::StrCat("both are pre-LN: use placement \"", kHfNormPlacement, "\""));
  if (m.attention().score() != kHfScore)
    return NoEquivalent(absl::StrCat("model.attention.score '", m.attention().score(), "'"), EveryArchitecture(),
                        absl::StrCat("both use score \"", kHfScore, "\""));
  if (m.tie_embeddings() && m.scale_embeddings())
    return NoEquivalent("a tied head with embeddings scaled by sqrt(d_model) (model.scale_embeddings true)",
                        EveryArchitecture(),
                        "their tied lm_head is the stored embedding itself: train with model { scale_embeddings: "
                        "false } to tie");
  if (m.head_bias())
    return NoEquivalent("the output head's bias (model.head_bias true)", EveryArchitecture(),
                        "their lm_head has no bias: train with model { head_bias: false }");
  if (m.value_residual().enabled())
    return NoEquivalent("the value residual (model.value_residual.enabled)", EveryArchitecture(),
                        "their attention has no value residual: train without model.value_residual");
  if (m.memory_tokens().count() > 0)
    return NoEquivalent("memory tokens (model.memory_tokens.count > 0)", EveryArchitecture(),
                        "they prepend no learned vectors: train without model.memory_tokens");
  if (m.multi_token_prediction().num_tokens() >= 2)
    return NoEquivalent("multi-token prediction heads (model.multi_token_prediction.num_tokens >= 2)",
                        EveryArchitecture(),
                        "they have one head, and dropping the extra ones would be silent: train without "
                        "model.multi_token_prediction to export");
  // µP changes the forward (attention sqrt(hs_base)/hs, the head's input / width ratio).
  if (m.init().plugin() == "mup")
    return NoEquivalent("model.init \"mup\" (attention logits scaled by sqrt(hs_base)/hs and the head's input "
                        "by base_width/d_model)", EveryArchitecture(),
                        "their attention scale is 1/sqrt(hs) and their lm_head has no multiplier: export a run "
                        "trained with model.init \"default\" or \"gpt2\"");
  return absl::OkStatus();
}

// The norm, ffn and layout `arch` has.
absl::Status CheckPlugins(const ModelSpec& m, const HfArchitecture& arch) {
  const HfArchitecture& other = OtherHfArchitecture(arch);
  if (m.norm().plugin() != arch.norm)
    return NoEquivalent(absl::StrCat("model.norm.plugin '", m.norm().plugin(), "' (with ", arch.with_words, ")"),
                        arch.name,
                        absl::StrCat(arch.name, " uses \"", arch.norm, "\" (", other.name, ", with ", other.norm, ", ",
                                     other.position_words, ")"));
  if (m.ffn().plugin() != arch.ffn)
    return NoEquivalent(absl::StrCat("model.ffn.plugin '", m.ffn().plugin(), "' (with ", arch.with_words, ")"),
                        arch.name, absl::StrCat(arch.name, "'s MLP is \"", arch.ffn, "\""));
  const std::string& layout = m.attention().layout();
  if (std::find(arch.layouts.begin(), arch.layouts.end(), layout) == arch.layouts.end())
    return NoEquivalent(absl::StrCat("model.attention.layout '", layout, "'"), arch.name, arch.layouts_fix);
  const AttentionSpec& a = m.attention();
  if (a.logit_softcap() > 0.0f || a.sink() != AttentionSpec::Sink::NONE ||
      a.qk_norm() != AttentionSpec::QkNorm::NONE || a.output_gate() != AttentionSpec::OutputGate::NONE)
    return NoEquivalent("model.attention's options (logit_softcap, sink, qk_norm, output_gate)", arch.name,
                        absl::StrCat(arch.name, " has none of them; only a run with all of them off exports"));
  return absl::OkStatus();
}

// How one tvlab tensor (or q, k, v) becomes the HF one.
Tensor ToHfLayout(HfLayout layout, const std::vector<Tensor>& parts, bool is_bias, const ModelSpec& m,
                  const HfConfigValues& values) {
  switch (layout) {
    case HfLayout::kEmbedding:
      // tvlab multiplies the looked-up rows by sqrt(C) in float; HF does not.
      return m.scale_embeddings() ? Scaled(parts[0], std::sqrt(static_cast<float>(values.d_model)))
                                  : Copy(parts[0]);
    case HfLayout::kRopeRows:
      return values.interleaved_rope ? InterleavedToHalves(parts[0], values.head_dim) : Copy(parts[0]);
    case HfLayout::kConv1d: {
      if (is_bias) return ConcatLast(parts);  // (3C) for c_attn
      std::vector<Tensor> transposed;
      for (const Tensor& p : parts) transposed.push_back(Transposed(p));  // Conv1D: (in, out)
      return ConcatLast(transposed);  // (C, 3C) for c_attn
    }
    case HfLayout::kSame:
      break;
  }
  return Copy(parts[0]);
}

// Appends the HF tensor `t` (weight, then bias) from the tvlab tensors under
// `from`, named under `to`. A bias the run does not have (model.bias false,
// layernorm bias false) is a zero bias where the architecture has every
// bias: the same function. One it should have must be there.
absl::Status AppendTensor(const HfTensor& t, const std::string& from, const std::string& to,
                          const HfArchitecture& arch, const ModelSpec& m, const HfConfigValues& values,
                          const Weights& w, HfModel* out) {
  const bool has_bias = t.bias == HfBias::kModel ? m.bias() : t.bias == HfBias::kNorm && values.norm_bias;
  const bool write_bias = t.bias != HfBias::kNone && (has_bias || arch.every_bias);
  std::vector<Tensor> weights, biases;
  for (const std::string& part : t.tvlab) {
    TVLAB_ASSIGN_OR_RETURN(Tensor weight, w.Get(absl::StrCat(from, part, ".weight")));
    weights.push_back(weight);
    if (!write_bias) continue;
    if (has_bias) {
      TVLAB_ASSIGN_OR_RETURN(Tensor bias, w.Get(absl::StrCat(from, part, ".bias")));
      biases.push_back(bias);
    } else {
      biases.push_back(Tensor::Zeros({weight.shape()[0]}));
    }
  }
  out->tensors.push_back({absl::StrCat(to, t.hf, ".weight"), ToHfLayout(t.layout, weights, false, m, values)});
  if (write_bias)
    out->tensors.push_back({absl::StrCat(to, t.hf, ".bias"), ToHfLayout(t.layout, biases, true, m, values)});
  return absl::OkStatus();
}

// The sizes and options config.json is written from.
absl::StatusOr<HfConfigValues> ConfigValues(const ModelSpec& m, const HfArchitecture& arch,
                                            const std::map<std::string, Tensor>& weights) {
  const Weights w(weights);
  HfConfigValues v;
  v.d_model = m.d_model();
  v.layers = m.num_layers();
  v.heads = m.num_heads();
  v.head_dim = v.d_model / v.heads;
  v.max_seq_len = m.max_seq_len();
  v.dropout = m.dropout();
  v.bias = m.bias();
  TVLAB_ASSIGN_OR_RETURN(Tensor embedding, w.Get("embedding.weight"));
  v.vocab = embedding.shape()[0];
  if (v.layers > 0) {
    TVLAB_ASSIGN_OR_RETURN(Tensor w_1, w.Get(absl::StrCat(arch.tvlab_layer, v.layers - 1, ".ffn.w_1.weight")));
    v.d_ff = w_1.shape()[0];
  }
  auto positions = weights.find("position.weight");  // (P, C): learned positions only
  if (positions != weights.end()) v.positions = positions->second.shape()[0];
  TVLAB_RETURN_IF_ERROR(arch.read_options(m, &v));
  return v;
}

// GPT-2's bytes_to_unicode(): byte b as the printable character its
// ByteLevel pre-tokenizer uses for it.
std::vector<int> ByteCharacters() {
  std::vector<int> chars(256, -1);
  for (int b = 0; b < 256; ++b)
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) chars[b] = b;
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if (chars[b] < 0) chars[b] = 256 + n++;
  return chars;
}

void AddByteTokenizer(HfModel* out) {
  const std::vector<int> chars = ByteCharacters();
  std::vector<std::string> vocab;
  for (int b = 0; b < 256; ++b) vocab.push_back(absl::StrFormat("\"\\u%04x\": %d", chars[b], b));
  const std::string byte_level =
      "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, "
      "\"use_regex\": false}";
  out->tokenizer_json = absl::StrCat(
      "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n",
      "  \"added_tokens\": [],\n  \"normalizer\": null,\n  \"pre_tokenizer\": ", byte_level,
      ",\n  \"post_processor\": null,\n  \"decoder\": ", byte_level,
      ",\n  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
      "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": false, "
      "\"byte_fallback\": false, \"ignore_merges\": false,\n    \"vocab\": {",
      absl::StrJoin(vocab, ", "), "},\n    \"merges\": []}\n}\n");
  out->tokenizer_config_json =
      "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n  \"model_max_length\": 1000000,\n"
      "  \"clean_up_tokenization_spaces\": false\n}\n";
}

}  // namespace

absl::StatusOr<HfModel> ModelToHuggingFace(const ModelSpec& m, const std::map<std::string, Tensor>& weights) {
  TVLAB_RETURN_IF_ERROR(CheckFamily(m));
  TVLAB_RETURN_IF_ERROR(CheckLayersAlike(m, "Hugging Face export"));
  const HfArchitecture* arch = HfArchitectureFor(m.position().plugin());
  if (arch == nullptr) {
    const HfArchitecture& first = HfArchitectures()[0];
    const HfArchitecture& second = HfArchitectures()[1];
    return NoEquivalent(absl::StrCat("model.position.plugin '", m.position().plugin(), "'"), EveryArchitecture(),
                        absl::StrCat(first.name, " uses \"", first.position, "\", ", second.name, " \"",
                                     second.position, "\""));
  }
  TVLAB_RETURN_IF_ERROR(CheckPlugins(m, *arch));
  TVLAB_RETURN_IF_ERROR(CheckCommon(m));
  // A tied head (model.tie_embeddings) is the embedding table: lm_head is
  // written as wte's copy, and config.json says tie_word_embeddings.
  std::map<std::string, Tensor> with_head = weights;
  if (m.tie_embeddings() && with_head.count("embedding.weight"))
    with_head["head.weight"] = with_head.at("embedding.weight");
  TVLAB_ASSIGN_OR_RETURN(HfConfigValues values, ConfigValues(m, *arch, with_head));
  values.tie_embeddings = m.tie_embeddings();
  const Weights w(with_head);
  HfModel out;
  out.architecture = arch->class_name;
  for (const HfTensor& t : arch->first) TVLAB_RETURN_IF_ERROR(AppendTensor(t, "", "", *arch, m, values, w, &out));
  for (int64_t l = 0; l < values.layers; ++l) {
    const std::string from = absl::StrCat(arch->tvlab_layer, l, "."), to = absl::StrCat(arch->hf_layer, l, ".");
    for (const HfTensor& t : arch->layer) TVLAB_RETURN_IF_ERROR(AppendTensor(t, from, to, *arch, m, values, w, &out));
  }
  for (const HfTensor& t : arch->last) TVLAB_RETURN_IF_ERROR(AppendTensor(t, "", "", *arch, m, values, w, &out));
  out.config_json = HfConfigJson(*arch, values);
  return out;
}

absl::StatusOr<HfModel> ToHuggingFace(const Experiment& spec, const std::map<std::string, Tensor>& weights) {
  absl::StatusOr<HfModel> out = ModelToHuggingFace(spec.model(), weights);
  if (out.ok() && spec.task().plugin() == kHfByteLevelTask) AddByteTokenizer(&*out);
  return out;
}

namespace {

// Through a temporary name, so a crash never leaves half a file.
absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path + ".tmp", std::ios::trunc);
  out << text;
  out.close();
  std::error_code error;
  if (out) std::filesystem::rename(path + ".tmp", path, error);
  if (!out || error) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path, " ", error.message()));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteHuggingFace(const HfModel& model, const std::string& out_dir) {
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create the output directory ", out_dir, ": ", error.message()));
  }
  std::vector<std::pair<std::string, Var>> vars;
  for (const auto& [name, tensor] : model.tensors) vars.push_back({name, Var(tensor)});
  TVLAB_RETURN_IF_ERROR(WriteSafetensors(out_dir + "/model.safetensors", vars));
  TVLAB_RETURN_IF_ERROR(WriteText(out_dir + "/config.json", model.config_json));
  if (model.tokenizer_json.empty()) return absl::OkStatus();
  TVLAB_RETURN_IF_ERROR(WriteText(out_dir + "/tokenizer.json", model.tokenizer_json));
  return WriteText(out_dir + "/tokenizer_config.json", model.tokenizer_config_json);
}

}  // namespace tvlab
