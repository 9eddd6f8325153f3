#include "experiments/hf_export.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/autograd/var.h"
#include "framework/core/status_macros.h"
#include "framework/interfaces/task.h"
#include "framework/train/safetensors.h"
#include "plugins/attention/gqa/gqa.pb.h"
#include "plugins/ffn/gelu/gelu.pb.h"
#include "plugins/norm/layernorm/layernorm.pb.h"
#include "plugins/norm/rmsnorm/rmsnorm.pb.h"
#include "plugins/position/rope/rope.pb.h"

namespace tvlab {
namespace {

// The plugin's options from the resolved spec, or the defaults when absent.
template <typename Options>
absl::StatusOr<Options> Unpack(const google::protobuf::Any& any, const std::string& field) {
  Options options;
  if (any.type_url().empty()) return options;
  if (!any.UnpackTo(&options)) {
    return absl::InvalidArgumentError(absl::StrCat(field, " holds ", any.type_url(), ", not ",
                                                   options.GetDescriptor()->full_name()));
  }
  return options;
}

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
  bool Has(const std::string& name) const { return w_.count(name) > 0; }

 private:
  const std::map<std::string, Tensor>& w_;
};

Tensor Copy(const Tensor& t) { return Tensor::FromVector(t.shape(), t.ToVector()); }

Tensor Scaled(const Tensor& t, float factor) {
  std::vector<float> v = t.ToVector();
  for (float& x : v) x *= factor;
  return Tensor::FromVector(t.shape(), std::move(v));
}

// (r, c) -> (c, r).
Tensor Transposed(const Tensor& t) {
  const int64_t r = t.shape()[0], c = t.shape()[1];
  std::vector<float> in = t.ToVector(), out(in.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[j * r + i] = in[i * c + j];
  return Tensor::FromVector({c, r}, std::move(out));
}

// Concatenation along the last dimension of tensors of equal leading shape.
Tensor ConcatLast(const std::vector<Tensor>& parts) {
  const int64_t rows = parts[0].rank() == 1 ? 1 : parts[0].shape()[0];
  int64_t cols = 0;
  std::vector<std::vector<float>> values;
  for (const Tensor& p : parts) {
    cols += p.shape().back();
    values.push_back(p.ToVector());
  }
  std::vector<float> out;
  out.reserve(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < parts.size(); ++k) {
      const int64_t w = parts[k].shape().back();
      out.insert(out.end(), values[k].begin() + r * w, values[k].begin() + (r + 1) * w);
    }
  if (parts[0].rank() == 1) return Tensor::FromVector({cols}, std::move(out));
  return Tensor::FromVector({rows, cols}, std::move(out));
}

// Rows (dimension 0) of a q or k projection (heads * hs, ...) reordered per
// head from INTERLEAVED pairs (x[2i], x[2i+1]) to rotate_half's
// (x[i], x[i + hs/2]): new row j of a head is old row 2j (j < hs/2) or
// 2(j - hs/2) + 1.
Tensor InterleavedToHalves(const Tensor& t, int64_t head_dim) {
  const int64_t rows = t.shape()[0], width = t.numel() / rows, half = head_dim / 2;
  std::vector<float> in = t.ToVector(), out(in.size());
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t head = row / head_dim, j = row % head_dim;
    const int64_t from = head * head_dim + (j < half ? 2 * j : 2 * (j - half) + 1);
    std::copy(in.begin() + from * width, in.begin() + (from + 1) * width, out.begin() + row * width);
  }
  return Tensor::FromVector(t.shape(), std::move(out));
}

std::string Number(double v) { return absl::StrFormat("%.9g", v); }

absl::Status NoEquivalent(const std::string& what, const std::string& target, const std::string& fix) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, " has no equivalent in Hugging Face ", target, "; ", fix));
}

struct Common {
  int64_t vocab = 0, d_model = 0, layers = 0, heads = 0, head_dim = 0, max_seq_len = 0;
  Tensor embedding;  // (V, C), scale folded in
  Tensor head;       // (V, C)
};

absl::StatusOr<Common> CheckCommon(const Experiment& spec, const Weights& w) {
  const ModelSpec& m = spec.model();
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
  if (m.norm().placement() != "pre_ln")
    return NoEquivalent(absl::StrCat("model.norm.placement '", m.norm().placement(), "'"),
                        "Llama or GPT-2", "both are pre-LN: use placement \"pre_ln\"");
  if (m.attention().score() != "scaled_dot_product")
    return NoEquivalent(absl::StrCat("model.attention.score '", m.attention().score(), "'"),
                        "Llama or GPT-2", "both use score \"scaled_dot_product\"");
  if (m.head_bias())
    return NoEquivalent("the output head's bias (model.head_bias true)", "Llama or GPT-2",
                        "their lm_head has no bias: train with model { head_bias: false }");
  Common c;
  c.d_model = m.d_model();
  c.layers = m.num_layers();
  c.heads = m.num_heads();
  c.head_dim = c.d_model / c.heads;
  c.max_seq_len = m.max_seq_len();
  TVLAB_ASSIGN_OR_RETURN(Tensor embedding, w.Get("embedding.weight"));
  c.vocab = embedding.shape()[0];
  // tvlab multiplies the looked-up rows by sqrt(C) in float; HF does not.
  c.embedding = m.scale_embeddings()
                    ? Scaled(embedding, std::sqrt(static_cast<float>(c.d_model)))
                    : Copy(embedding);
  TVLAB_ASSIGN_OR_RETURN(Tensor head, w.Get("head.weight"));
  c.head = Copy(head);
  return c;
}

std::string TokenIds() {
  return absl::StrCat("  \"bos_token_id\": ", kBos, ",\n  \"eos_token_id\": ", kEos,
                      ",\n  \"pad_token_id\": ", kPad, ",\n");
}

absl::StatusOr<HfModel> ToLlama(const Experiment& spec, const Weights& w) {
  const ModelSpec& m = spec.model();
  const std::string target = "Llama";
  if (m.norm().plugin() != "rmsnorm")
    return NoEquivalent(absl::StrCat("model.norm.plugin '", m.norm().plugin(), "' (with rope)"), target,
                        "Llama uses \"rmsnorm\" (GPT-2, with layernorm, has learned positions)");
  if (m.ffn().plugin() != "swiglu")
    return NoEquivalent(absl::StrCat("model.ffn.plugin '", m.ffn().plugin(), "' (with rope)"), target,
                        "Llama's MLP is \"swiglu\"");
  const std::string& layout = m.attention().layout();
  if (layout != "mha" && layout != "gqa" && layout != "mqa")
    return NoEquivalent(absl::StrCat("model.attention.layout '", layout, "'"), target,
                        "Llama has mha, gqa and mqa");
  TVLAB_ASSIGN_OR_RETURN(Common c, CheckCommon(spec, w));
  TVLAB_ASSIGN_OR_RETURN(RopeOptions rope,
                         Unpack<RopeOptions>(m.position().options(), "model.position.options"));
  TVLAB_ASSIGN_OR_RETURN(RmsNormOptions norm,
                         Unpack<RmsNormOptions>(m.norm().options(), "model.norm.options"));
  int64_t kv_heads = c.heads;
  if (layout == "mqa") kv_heads = 1;
  if (layout == "gqa") {
    TVLAB_ASSIGN_OR_RETURN(GqaOptions gqa, Unpack<GqaOptions>(m.attention().layout_options(),
                                                              "model.attention.layout_options"));
    kv_heads = gqa.num_kv_heads() > 0 ? gqa.num_kv_heads() : c.heads / 2;  // gqa.cc's default
  }
  const bool interleaved = rope.pairing() == RopeOptions::INTERLEAVED;
  HfModel out;
  out.architecture = "LlamaForCausalLM";
  out.tensors.push_back({"model.embed_tokens.weight", c.embedding});
  int64_t intermediate = 0;
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string from = absl::StrCat("decoder.layers.", l, ".");
    const std::string to = absl::StrCat("model.layers.", l, ".");
    const std::vector<std::string> suffixes =
        m.bias() ? std::vector<std::string>{"weight", "bias"} : std::vector<std::string>{"weight"};
    for (const auto& [ours, theirs] : std::vector<std::pair<std::string, std::string>>{
             {"attention.w_q", "self_attn.q_proj"}, {"attention.w_k", "self_attn.k_proj"},
             {"attention.w_v", "self_attn.v_proj"}, {"attention.w_o", "self_attn.o_proj"},
             {"ffn.w_1", "mlp.gate_proj"}, {"ffn.w_3", "mlp.up_proj"}, {"ffn.w_2", "mlp.down_proj"}}) {
      for (const std::string& s : suffixes) {
        TVLAB_ASSIGN_OR_RETURN(Tensor t, w.Get(absl::StrCat(from, ours, ".", s)));
        const bool rotated = ours == "attention.w_q" || ours == "attention.w_k";
        out.tensors.push_back({absl::StrCat(to, theirs, ".", s),
                               rotated && interleaved ? InterleavedToHalves(t, c.head_dim) : Copy(t)});
        if (ours == "ffn.w_1" && s == "weight") intermediate = t.shape()[0];
      }
    }
    TVLAB_ASSIGN_OR_RETURN(Tensor ln1, w.Get(from + "attention_residual.norm.weight"));
    TVLAB_ASSIGN_OR_RETURN(Tensor ln2, w.Get(from + "ffn_residual.norm.weight"));
    out.tensors.push_back({to + "input_layernorm.weight", Copy(ln1)});
    out.tensors.push_back({to + "post_attention_layernorm.weight", Copy(ln2)});
  }
  TVLAB_ASSIGN_OR_RETURN(Tensor final_norm, w.Get("decoder.final_norm.weight"));
  out.tensors.push_back({"model.norm.weight", Copy(final_norm)});
  out.tensors.push_back({"lm_head.weight", c.head});
  const std::string bias = m.bias() ? "true" : "false";
  out.config_json = absl::StrCat(
      "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n",
      "  \"vocab_size\": ", c.vocab, ",\n  \"hidden_size\": ", c.d_model,
      ",\n  \"intermediate_size\": ", intermediate, ",\n  \"num_hidden_layers\": ", c.layers,
      ",\n  \"num_attention_heads\": ", c.heads, ",\n  \"num_key_value_heads\": ", kv_heads,
      ",\n  \"head_dim\": ", c.head_dim, ",\n  \"hidden_act\": \"silu\",\n",
      "  \"max_position_embeddings\": ", c.max_seq_len, ",\n  \"rms_norm_eps\": ", Number(norm.eps()),
      // rope_parameters for transformers >= 5, rope_theta for 4.x.
      ",\n  \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": ", Number(rope.base()),
      "},\n  \"rope_theta\": ", Number(rope.base()), ",\n  \"attention_bias\": ", bias, ",\n  \"mlp_bias\": ", bias,
      ",\n  \"attention_dropout\": ", Number(m.dropout()),
      ",\n  \"tie_word_embeddings\": false,\n  \"torch_dtype\": \"float32\",\n", TokenIds(),
      "  \"use_cache\": true\n}\n");
  return out;
}

absl::StatusOr<HfModel> ToGpt2(const Experiment& spec, const Weights& w) {
  const ModelSpec& m = spec.model();
  const std::string target = "GPT-2";
  if (m.norm().plugin() != "layernorm")
    return NoEquivalent(absl::StrCat("model.norm.plugin '", m.norm().plugin(), "' (with learned positions)"),
                        target, "GPT-2 uses \"layernorm\" (Llama, with rmsnorm, uses rope)");
  if (m.ffn().plugin() != "gelu")
    return NoEquivalent(absl::StrCat("model.ffn.plugin '", m.ffn().plugin(), "' (with learned positions)"),
                        target, "GPT-2's MLP is \"gelu\"");
  if (m.attention().layout() != "mha")
    return NoEquivalent(absl::StrCat("model.attention.layout '", m.attention().layout(), "'"), target,
                        "GPT-2 has multi-head attention only (\"mha\"); grouped heads need rope for Llama");
  TVLAB_ASSIGN_OR_RETURN(Common c, CheckCommon(spec, w));
  TVLAB_ASSIGN_OR_RETURN(LayerNormOptions norm,
                         Unpack<LayerNormOptions>(m.norm().options(), "model.norm.options"));
  TVLAB_ASSIGN_OR_RETURN(GeluFfnOptions gelu, Unpack<GeluFfnOptions>(m.ffn().options(), "model.ffn.options"));
  TVLAB_ASSIGN_OR_RETURN(Tensor positions, w.Get("position.weight"));  // (P, C)
  // A bias the run does not have (model.bias false, layernorm bias false) is
  // a zero bias: the same function. One it should have must be there.
  auto bias = [&](const std::string& name, int64_t size) -> absl::StatusOr<Tensor> {
    const bool of_norm = name.find("norm.bias") != std::string::npos;
    if (of_norm ? norm.bias() : m.bias()) {
      TVLAB_ASSIGN_OR_RETURN(Tensor b, w.Get(name));
      return Copy(b);
    }
    return Tensor::Zeros({size});
  };
  HfModel out;
  out.architecture = "GPT2LMHeadModel";
  out.tensors.push_back({"transformer.wte.weight", c.embedding});
  out.tensors.push_back({"transformer.wpe.weight", Copy(positions)});
  int64_t inner = 0;
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string from = absl::StrCat("decoder.layers.", l, ".");
    const std::string to = absl::StrCat("transformer.h.", l, ".");
    std::vector<Tensor> qkv_w, qkv_b;
    for (const char* p : {"w_q", "w_k", "w_v"}) {
      TVLAB_ASSIGN_OR_RETURN(Tensor t, w.Get(absl::StrCat(from, "attention.", p, ".weight")));
      qkv_w.push_back(Transposed(t));  // Conv1D: (in, out)
      TVLAB_ASSIGN_OR_RETURN(Tensor b, bias(absl::StrCat(from, "attention.", p, ".bias"), c.d_model));
      qkv_b.push_back(b);
    }
    out.tensors.push_back({to + "attn.c_attn.weight", ConcatLast(qkv_w)});  // (C, 3C)
    out.tensors.push_back({to + "attn.c_attn.bias", ConcatLast(qkv_b)});    // (3C)
    TVLAB_ASSIGN_OR_RETURN(Tensor wo, w.Get(from + "attention.w_o.weight"));
    out.tensors.push_back({to + "attn.c_proj.weight", Transposed(wo)});
    TVLAB_ASSIGN_OR_RETURN(Tensor bo, bias(from + "attention.w_o.bias", c.d_model));
    out.tensors.push_back({to + "attn.c_proj.bias", bo});
    TVLAB_ASSIGN_OR_RETURN(Tensor w1, w.Get(from + "ffn.w_1.weight"));  // (F, C)
    inner = w1.shape()[0];
    out.tensors.push_back({to + "mlp.c_fc.weight", Transposed(w1)});
    TVLAB_ASSIGN_OR_RETURN(Tensor b1, bias(from + "ffn.w_1.bias", inner));
    out.tensors.push_back({to + "mlp.c_fc.bias", b1});
    TVLAB_ASSIGN_OR_RETURN(Tensor w2, w.Get(from + "ffn.w_2.weight"));
    out.tensors.push_back({to + "mlp.c_proj.weight", Transposed(w2)});
    TVLAB_ASSIGN_OR_RETURN(Tensor b2, bias(from + "ffn.w_2.bias", c.d_model));
    out.tensors.push_back({to + "mlp.c_proj.bias", b2});
    for (const auto& [ours, theirs] : std::vector<std::pair<std::string, std::string>>{
             {"attention_residual.norm", "ln_1"}, {"ffn_residual.norm", "ln_2"}}) {
      TVLAB_ASSIGN_OR_RETURN(Tensor g, w.Get(absl::StrCat(from, ours, ".weight")));
      out.tensors.push_back({absl::StrCat(to, theirs, ".weight"), Copy(g)});
      TVLAB_ASSIGN_OR_RETURN(Tensor b, bias(absl::StrCat(from, ours, ".bias"), c.d_model));
      out.tensors.push_back({absl::StrCat(to, theirs, ".bias"), b});
    }
  }
  TVLAB_ASSIGN_OR_RETURN(Tensor lnf, w.Get("decoder.final_norm.weight"));
  out.tensors.push_back({"transformer.ln_f.weight", Copy(lnf)});
  TVLAB_ASSIGN_OR_RETURN(Tensor lnf_b, bias("decoder.final_norm.bias", c.d_model));
  out.tensors.push_back({"transformer.ln_f.bias", lnf_b});
  out.tensors.push_back({"lm_head.weight", c.head});
  const int64_t n_positions = positions.shape()[0];
  out.config_json = absl::StrCat(
      "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n",
      "  \"vocab_size\": ", c.vocab, ",\n  \"n_embd\": ", c.d_model, ",\n  \"n_layer\": ", c.layers,
      ",\n  \"n_head\": ", c.heads, ",\n  \"n_inner\": ", inner, ",\n  \"n_positions\": ", n_positions,
      ",\n  \"n_ctx\": ", n_positions, ",\n  \"activation_function\": \"",
      gelu.tanh_approximation() ? "gelu_new" : "gelu", "\",\n  \"layer_norm_epsilon\": ",
      Number(norm.eps()), ",\n  \"resid_pdrop\": ", Number(m.dropout()), ",\n  \"embd_pdrop\": ",
      Number(m.dropout()), ",\n  \"attn_pdrop\": ", Number(m.dropout()),
      ",\n  \"scale_attn_weights\": true,\n  \"scale_attn_by_inverse_layer_idx\": false,\n",
      "  \"reorder_and_upcast_attn\": false,\n  \"tie_word_embeddings\": false,\n",
      "  \"torch_dtype\": \"float32\",\n", TokenIds(), "  \"use_cache\": true\n}\n");
  return out;
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

absl::StatusOr<HfModel> ToHuggingFace(const Experiment& spec,
                                      const std::map<std::string, Tensor>& weights) {
  const Weights w(weights);
  const std::string& position = spec.model().position().plugin();
  if (spec.model().family() != ModelSpec::DECODER_ONLY) return CheckCommon(spec, w).status();
  absl::StatusOr<HfModel> out;
  if (position == "rope") {
    out = ToLlama(spec, w);
  } else if (position == "learned") {
    out = ToGpt2(spec, w);
  } else {
    return NoEquivalent(absl::StrCat("model.position.plugin '", position, "'"), "Llama or GPT-2",
                        "Llama uses \"rope\", GPT-2 \"learned\"");
  }
  if (out.ok() && spec.task().plugin() == "text_lm") AddByteTokenizer(&*out);
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
