#include "experiments/hf_import.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "experiments/hf_export.h"
#include "framework/autograd/var.h"
#include "framework/core/status_macros.h"
#include "framework/train/safetensors.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "plugins/norm/layernorm/layernorm.pb.h"
#include "plugins/position/rope/rope.pb.h"

namespace tvlab {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

Tensor Scaled(const Tensor& t, float factor) {
  std::vector<float> v = t.ToVector();
  for (float& x : v) x *= factor;
  return Tensor::FromVector(t.shape(), std::move(v));
}

Tensor Transposed(const Tensor& t) {
  const int64_t r = t.shape()[0], c = t.shape()[1];
  std::vector<float> in = t.ToVector(), out(in.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[j * r + i] = in[i * c + j];
  return Tensor::FromVector({c, r}, std::move(out));
}

// Columns [first, first + count) of a (rows, cols) tensor, or elements of a vector.
Tensor Columns(const Tensor& t, int64_t first, int64_t count) {
  const bool vector = t.rank() == 1;
  const int64_t rows = vector ? 1 : t.shape()[0], cols = t.shape().back();
  std::vector<float> in = t.ToVector(), out;
  for (int64_t r = 0; r < rows; ++r)
    out.insert(out.end(), in.begin() + r * cols + first, in.begin() + r * cols + first + count);
  return vector ? Tensor::FromVector({count}, std::move(out)) : Tensor::FromVector({rows, count}, std::move(out));
}

// rotate_half rows (x[i], x[i + hs/2]) back to INTERLEAVED (x[2i], x[2i+1]).
Tensor HalvesToInterleaved(const Tensor& t, int64_t head_dim) {
  const int64_t rows = t.shape()[0], width = t.numel() / rows, half = head_dim / 2;
  std::vector<float> in = t.ToVector(), out(in.size());
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t head = row / head_dim, k = row % head_dim;
    const int64_t from = head * head_dim + (k % 2 == 0 ? k / 2 : half + k / 2);
    std::copy(in.begin() + from * width, in.begin() + (from + 1) * width, out.begin() + row * width);
  }
  return Tensor::FromVector(t.shape(), std::move(out));
}

absl::StatusOr<Struct> ParseJson(const std::string& text, const std::string& what) {
  Struct json;
  auto parsed = google::protobuf::util::JsonStringToMessage(text, &json);
  if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": not JSON: ", parsed.message().ToString()));
  return json;
}

absl::StatusOr<Struct> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return ParseJson(text.str(), path);
}

// HF buffers that are not weights (older GPT-2 causal masks, rotary tables).
bool IsBuffer(const std::string& name) {
  auto ends = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".attn.bias") || ends(".attn.masked_bias") || ends("rotary_emb.inv_freq");
}

std::string Show(const Value& v) {
  std::string s;
  (void)google::protobuf::util::MessageToJsonString(v, &s);
  return s;
}

bool Same(const Value& a, const Value& b) {
  if (a.kind_case() == Value::kNumberValue && b.kind_case() == Value::kNumberValue)
    return std::abs(a.number_value() - b.number_value()) <= 1e-6 * std::max(1.0, std::abs(b.number_value()));
  return Show(a) == Show(b);
}

// The spec field behind each config.json key the export writes.
std::string SpecField(const std::string& key) {
  static const std::map<std::string, std::string> fields = {
      {"vocab_size", "the task's vocabulary"}, {"hidden_size", "model.d_model"}, {"n_embd", "model.d_model"},
      {"num_hidden_layers", "model.num_layers"}, {"n_layer", "model.num_layers"},
      {"num_attention_heads", "model.num_heads"}, {"n_head", "model.num_heads"},
      {"num_key_value_heads", "model.attention.layout / num_kv_heads"},
      {"intermediate_size", "model.d_ff"}, {"n_inner", "model.d_ff"},
      {"rms_norm_eps", "model.norm.options eps"}, {"layer_norm_epsilon", "model.norm.options eps"},
      {"rope_theta", "model.position.options base"}, {"attention_bias", "model.bias"},
      {"mlp_bias", "model.bias"}, {"activation_function", "model.ffn.options tanh_approximation"},
      {"n_positions", "model.max_seq_len"}, {"head_dim", "model.d_model / model.num_heads"}};
  auto it = fields.find(key);
  return it == fields.end() ? "the spec" : it->second;
}

}  // namespace

bool IsHuggingFaceDirectory(const std::string& path) {
  return std::filesystem::is_directory(path) && std::filesystem::exists(path + "/config.json");
}

absl::StatusOr<std::map<std::string, Tensor>> FromHuggingFace(const Experiment& spec,
                                                             const std::string& hf_dir) {
  TVLAB_ASSIGN_OR_RETURN(Struct config, ReadJson(hf_dir + "/config.json"));
  TVLAB_ASSIGN_OR_RETURN(auto hf, ReadSafetensors(hf_dir + "/model.safetensors"));
  const ModelSpec& m = spec.model();
  const std::string type = config.fields().count("model_type") ? config.fields().at("model_type").string_value() : "";
  const bool llama = m.position().plugin() == "rope";
  if ((llama && type != "llama") || (!llama && type != "gpt2")) {
    return absl::FailedPreconditionError(absl::StrCat(
        hf_dir, "/config.json: model_type '", type, "', but the spec's model has position '",
        m.position().plugin(), "'; --init_from takes a Llama directory for a rope spec and a GPT-2 one for a "
        "learned-position spec"));
  }
  auto get = [&](const std::string& name) -> absl::StatusOr<Tensor> {
    auto it = hf.find(name);
    if (it == hf.end())
      return absl::NotFoundError(absl::StrCat(hf_dir, "/model.safetensors has no tensor '", name, "'"));
    return it->second;
  };
  const bool tied = config.fields().count("tie_word_embeddings") &&
                    config.fields().at("tie_word_embeddings").bool_value();
  const std::string embed_name = llama ? "model.embed_tokens.weight" : "transformer.wte.weight";
  if (tied && !hf.count("lm_head.weight")) hf["lm_head.weight"] = hf[embed_name];
  const int64_t c = m.d_model(), heads = m.num_heads(), hs = c / std::max(heads, int64_t{1});
  LayerNormOptions layernorm;
  if (!llama && !m.norm().options().type_url().empty()) m.norm().options().UnpackTo(&layernorm);
  const bool norm_bias = layernorm.bias();
  std::map<std::string, Tensor> w;
  TVLAB_ASSIGN_OR_RETURN(Tensor embed, get(embed_name));
  w["embedding.weight"] = m.scale_embeddings() ? Scaled(embed, 1.0f / std::sqrt(static_cast<float>(c))) : embed;
  TVLAB_ASSIGN_OR_RETURN(w["head.weight"], get("lm_head.weight"));
  for (int64_t l = 0; l < m.num_layers(); ++l) {
    const std::string to = absl::StrCat("decoder.layers.", l, ".");
    if (llama) {
      RopeOptions rope;
      if (!m.position().options().type_url().empty()) m.position().options().UnpackTo(&rope);
      const std::string from = absl::StrCat("model.layers.", l, ".");
      for (const auto& [ours, theirs] : std::vector<std::pair<std::string, std::string>>{
               {"attention.w_q", "self_attn.q_proj"}, {"attention.w_k", "self_attn.k_proj"},
               {"attention.w_v", "self_attn.v_proj"}, {"attention.w_o", "self_attn.o_proj"},
               {"ffn.w_1", "mlp.gate_proj"}, {"ffn.w_3", "mlp.up_proj"}, {"ffn.w_2", "mlp.down_proj"}}) {
        for (const char* s : {"weight", "bias"}) {
          const std::string name = absl::StrCat(from, theirs, ".", s);
          if (!hf.count(name)) continue;  // biases: the export's check below decides
          const bool rotated = ours == "attention.w_q" || ours == "attention.w_k";
          w[absl::StrCat(to, ours, ".", s)] =
              rotated && rope.pairing() == RopeOptions::INTERLEAVED ? HalvesToInterleaved(hf[name], hs) : hf[name];
        }
      }
      TVLAB_ASSIGN_OR_RETURN(w[to + "attention_residual.norm.weight"], get(from + "input_layernorm.weight"));
      TVLAB_ASSIGN_OR_RETURN(w[to + "ffn_residual.norm.weight"], get(from + "post_attention_layernorm.weight"));
    } else {
      const std::string from = absl::StrCat("transformer.h.", l, ".");
      TVLAB_ASSIGN_OR_RETURN(Tensor c_attn, get(from + "attn.c_attn.weight"));  // (C, 3C)
      TVLAB_ASSIGN_OR_RETURN(Tensor c_attn_b, get(from + "attn.c_attn.bias"));
      const char* names[] = {"w_q", "w_k", "w_v"};
      for (int i = 0; i < 3; ++i) {
        w[absl::StrCat(to, "attention.", names[i], ".weight")] = Transposed(Columns(c_attn, i * c, c));
        if (m.bias()) w[absl::StrCat(to, "attention.", names[i], ".bias")] = Columns(c_attn_b, i * c, c);
      }
      for (const auto& [ours, theirs] : std::vector<std::pair<std::string, std::string>>{
               {"attention.w_o", "attn.c_proj"}, {"ffn.w_1", "mlp.c_fc"}, {"ffn.w_2", "mlp.c_proj"}}) {
        TVLAB_ASSIGN_OR_RETURN(Tensor t, get(from + theirs + ".weight"));
        w[to + ours + ".weight"] = Transposed(t);
        if (m.bias()) {
          TVLAB_ASSIGN_OR_RETURN(w[to + ours + ".bias"], get(from + theirs + ".bias"));
        }
      }
      for (const auto& [ours, theirs] : std::vector<std::pair<std::string, std::string>>{
               {"attention_residual.norm", "ln_1"}, {"ffn_residual.norm", "ln_2"}}) {
        TVLAB_ASSIGN_OR_RETURN(w[to + ours + ".weight"], get(from + theirs + ".weight"));
        if (norm_bias) {
          TVLAB_ASSIGN_OR_RETURN(w[to + ours + ".bias"], get(from + theirs + ".bias"));
        }
      }
    }
  }
  if (llama) {
    TVLAB_ASSIGN_OR_RETURN(w["decoder.final_norm.weight"], get("model.norm.weight"));
  } else {
    TVLAB_ASSIGN_OR_RETURN(w["position.weight"], get("transformer.wpe.weight"));
    TVLAB_ASSIGN_OR_RETURN(w["decoder.final_norm.weight"], get("transformer.ln_f.weight"));
    if (norm_bias) {
      TVLAB_ASSIGN_OR_RETURN(w["decoder.final_norm.bias"], get("transformer.ln_f.bias"));
    }
  }
  // Check by exporting again: the spec's shape must be the HF model's.
  TVLAB_ASSIGN_OR_RETURN(HfModel again, ToHuggingFace(spec, w));
  TVLAB_ASSIGN_OR_RETURN(Struct ours, ParseJson(again.config_json, "the export's config"));
  static const std::set<std::string> kNotCompared = {
      "architectures", "model_type", "torch_dtype", "attention_dropout", "resid_pdrop", "embd_pdrop",
      "attn_pdrop", "bos_token_id", "eos_token_id", "pad_token_id", "use_cache", "tie_word_embeddings",
      "max_position_embeddings", "n_ctx", "rope_parameters", "rope_theta"};
  auto mismatch = [&](const std::string& key, const Value& theirs, const Value& mine) {
    return absl::FailedPreconditionError(absl::StrCat(
        hf_dir, "/config.json has ", key, " = ", Show(theirs), " but the spec gives ", Show(mine),
        ": set ", SpecField(key), " to match"));
  };
  for (const auto& [key, mine] : ours.fields()) {
    if (kNotCompared.count(key) || !config.fields().count(key)) continue;
    Value theirs = config.fields().at(key);
    if (key == "n_inner" && theirs.kind_case() == Value::kNullValue) theirs.set_number_value(4.0 * c);
    if (!Same(theirs, mine)) return mismatch(key, theirs, mine);
  }
  if (llama) {  // rope_theta at the top (transformers 4) or in rope_parameters (5)
    Value theirs;
    if (config.fields().count("rope_theta")) theirs = config.fields().at("rope_theta");
    if (config.fields().count("rope_parameters")) {
      const Struct& p = config.fields().at("rope_parameters").struct_value();
      if (p.fields().count("rope_type") && p.fields().at("rope_type").string_value() != "default") {
        return absl::FailedPreconditionError(absl::StrCat(
            hf_dir, "/config.json: rope_type '", p.fields().at("rope_type").string_value(),
            "' (scaled RoPE) has no tvlab equivalent; only \"default\" RoPE imports"));
      }
      if (p.fields().count("rope_theta")) theirs = p.fields().at("rope_theta");
    }
    if (theirs.kind_case() == Value::kNumberValue && !Same(theirs, ours.fields().at("rope_theta")))
      return mismatch("rope_theta", theirs, ours.fields().at("rope_theta"));
  }
  std::set<std::string> produced;
  for (const auto& [name, tensor] : again.tensors) {
    produced.insert(name);
    auto it = hf.find(name);
    if (it == hf.end()) continue;  // a bias the HF model lacks: AssignByName names it
    const std::vector<float> a = tensor.ToVector(), b = it->second.ToVector();
    float worst = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1.0f, std::abs(b[i])));
    if (a.size() != b.size() || worst > 1e-6f) {
      return absl::FailedPreconditionError(absl::StrCat(
          hf_dir, ": tensor '", name, "' does not come back unchanged through this spec (relative "
          "difference ", worst, "); e.g. nonzero biases with model.bias false"));
    }
  }
  for (const auto& [name, tensor] : hf) {
    if (!produced.count(name) && !IsBuffer(name)) {
      return absl::FailedPreconditionError(absl::StrCat(
          hf_dir, "/model.safetensors: tensor '", name, "' has no place in this spec's model "
          "(biases need model.bias true)"));
    }
  }
  return w;
}

absl::Status WriteImportedWeights(const Experiment& spec, const std::string& hf_dir,
                                  const std::string& out_file) {
  TVLAB_ASSIGN_OR_RETURN(auto weights, FromHuggingFace(spec, hf_dir));
  std::vector<std::pair<std::string, Var>> vars;
  for (const auto& [name, tensor] : weights) vars.push_back({name, Var(tensor)});
  return WriteSafetensors(out_file, vars);
}

}  // namespace tvlab
