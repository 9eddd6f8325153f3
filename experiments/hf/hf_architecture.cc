#include "experiments/hf/hf_architecture.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/core/status_macros.h"
#include "framework/interfaces/task.h"
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

std::string Number(double v) { return absl::StrFormat("%.9g", v); }
std::string Bool(bool b) { return b ? "true" : "false"; }
std::string Text(const std::string& s) { return absl::StrCat("\"", s, "\""); }

using Values = HfConfigValues;

HfConfigKey Fixed(const std::string& key, const std::string& json) {
  return {key, [json](const Values&) { return json; }};
}
HfConfigKey Compared(const std::string& key, std::function<std::string(const Values&)> json,
                     const std::string& spec_field = "the spec") {
  return {key, std::move(json), true, spec_field};
}
HfConfigKey Written(const std::string& key, std::function<std::string(const Values&)> json,
                    const std::string& spec_field = "the spec") {
  return {key, std::move(json), false, spec_field};
}

// Keys both architectures end with.
void AppendCommonTail(std::vector<HfConfigKey>* config) {
  config->push_back(Written("tie_word_embeddings", [](const Values& v) {  // model.tie_embeddings
    return std::string(v.tie_embeddings ? "true" : "false");
  }));
  config->push_back(Fixed("torch_dtype", Text("float32")));
  config->push_back(Fixed("bos_token_id", absl::StrCat(kBos)));
  config->push_back(Fixed("eos_token_id", absl::StrCat(kEos)));
  config->push_back(Fixed("pad_token_id", absl::StrCat(kPad)));
  config->push_back(Fixed("use_cache", "true"));
}

// Neither exported architecture has a sliding window: a windowed model
// would load there with full attention and compute something else.
absl::Status RejectWindow(const ModelSpec& m) {
  if (m.attention().window() <= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "model.attention.window (", m.attention().window(),
      ") has no counterpart in Llama's or GPT-2's Hugging Face config; export a model trained "
      "without a window"));
}

absl::Status ReadLlamaOptions(const ModelSpec& m, Values* v) {
  TVLAB_RETURN_IF_ERROR(RejectWindow(m));
  TVLAB_ASSIGN_OR_RETURN(RopeOptions rope, Unpack<RopeOptions>(m.position().options(), "model.position.options"));
  TVLAB_ASSIGN_OR_RETURN(RmsNormOptions norm, Unpack<RmsNormOptions>(m.norm().options(), "model.norm.options"));
  if (rope.rotary_fraction() != 1.0f || rope.scaling().method() != RopeScaling::NONE)
    return absl::InvalidArgumentError(absl::StrCat(
        "model.position.options: partial rotary (rotary_fraction ", rope.rotary_fraction(),
        ") and RoPE scaling (scaling.method ", RopeScaling::Method_Name(rope.scaling().method()),
        ") are not exported to Hugging Face Llama (the export writes plain RoPE only); "
        "export a model trained with rotary_fraction 1 and no scaling"));
  v->rope_base = rope.base();
  v->interleaved_rope = rope.pairing() == RopeOptions::INTERLEAVED;
  v->norm_eps = norm.eps();
  v->kv_heads = v->heads;
  if (m.attention().layout() == kHfSingleKvLayout) v->kv_heads = 1;
  if (m.attention().layout() == kHfGroupedLayout) {
    TVLAB_ASSIGN_OR_RETURN(GqaOptions gqa,
                           Unpack<GqaOptions>(m.attention().layout_options(), "model.attention.layout_options"));
    v->kv_heads = gqa.num_kv_heads() > 0 ? gqa.num_kv_heads() : v->heads / 2;  // gqa.cc's default
  }
  return absl::OkStatus();
}

absl::Status ReadGpt2Options(const ModelSpec& m, Values* v) {
  TVLAB_RETURN_IF_ERROR(RejectWindow(m));
  TVLAB_ASSIGN_OR_RETURN(LayerNormOptions norm, Unpack<LayerNormOptions>(m.norm().options(), "model.norm.options"));
  TVLAB_ASSIGN_OR_RETURN(GeluFfnOptions gelu, Unpack<GeluFfnOptions>(m.ffn().options(), "model.ffn.options"));
  v->norm_eps = norm.eps();
  v->norm_bias = norm.bias();
  v->gelu_tanh = gelu.tanh_approximation();
  v->kv_heads = v->heads;
  return absl::OkStatus();
}

HfArchitecture Llama() {
  HfArchitecture a;
  a.name = "Llama";
  a.class_name = "LlamaForCausalLM";
  a.model_type = "llama";
  a.position = "rope";
  a.norm = "rmsnorm";
  a.ffn = "swiglu";
  a.layouts = {"mha", kHfGroupedLayout, kHfSingleKvLayout};
  a.with_words = "rope";
  a.position_words = "uses rope";
  a.spec_words = "a rope spec";
  a.layouts_fix = "Llama has mha, gqa and mqa";
  a.read_options = ReadLlamaOptions;
  a.tvlab_layer = "decoder.layers.";
  a.hf_layer = "model.layers.";
  a.first = {{{"embedding"}, "model.embed_tokens", HfLayout::kEmbedding}};
  a.layer = {{{"attention.w_q"}, "self_attn.q_proj", HfLayout::kRopeRows, HfBias::kModel},
             {{"attention.w_k"}, "self_attn.k_proj", HfLayout::kRopeRows, HfBias::kModel},
             {{"attention.w_v"}, "self_attn.v_proj", HfLayout::kSame, HfBias::kModel},
             {{"attention.w_o"}, "self_attn.o_proj", HfLayout::kSame, HfBias::kModel},
             {{"ffn.w_1"}, "mlp.gate_proj", HfLayout::kSame, HfBias::kModel},
             {{"ffn.w_3"}, "mlp.up_proj", HfLayout::kSame, HfBias::kModel},
             {{"ffn.w_2"}, "mlp.down_proj", HfLayout::kSame, HfBias::kModel},
             {{"attention_residual.norm"}, "input_layernorm"},
             {{"ffn_residual.norm"}, "post_attention_layernorm"}};
  a.last = {{{"decoder.final_norm"}, "model.norm"}, {{"head"}, "lm_head"}};
  a.config = {
      Fixed("architectures", absl::StrCat("[", Text(a.class_name), "]")),
      Fixed("model_type", Text(a.model_type)),
      Compared("vocab_size", [](const Values& v) { return absl::StrCat(v.vocab); }, "the task's vocabulary"),
      Compared("hidden_size", [](const Values& v) { return absl::StrCat(v.d_model); }, "model.d_model"),
      Compared("intermediate_size", [](const Values& v) { return absl::StrCat(v.d_ff); }, "model.d_ff"),
      Compared("num_hidden_layers", [](const Values& v) { return absl::StrCat(v.layers); }, "model.num_layers"),
      Compared("num_attention_heads", [](const Values& v) { return absl::StrCat(v.heads); }, "model.num_heads"),
      Compared("num_key_value_heads", [](const Values& v) { return absl::StrCat(v.kv_heads); },
               "model.attention.layout / num_kv_heads"),
      Compared("head_dim", [](const Values& v) { return absl::StrCat(v.head_dim); },
               "model.d_model / model.num_heads"),
      Compared("hidden_act", [](const Values&) { return Text("silu"); }),
      Written("max_position_embeddings", [](const Values& v) { return absl::StrCat(v.max_seq_len); }),
      Compared("rms_norm_eps", [](const Values& v) { return Number(v.norm_eps); }, "model.norm.options eps"),
      // rope_parameters for transformers >= 5, rope_theta for 4.x (import
      // reads either; hf_import.cc).
      Written("rope_parameters",
              [](const Values& v) {
                return absl::StrCat("{\"rope_type\": \"default\", \"rope_theta\": ", Number(v.rope_base), "}");
              }),
      Written("rope_theta", [](const Values& v) { return Number(v.rope_base); }, "model.position.options base"),
      Compared("attention_bias", [](const Values& v) { return Bool(v.bias); }, "model.bias"),
      Compared("mlp_bias", [](const Values& v) { return Bool(v.bias); }, "model.bias"),
      Written("attention_dropout", [](const Values& v) { return Number(v.dropout); }),
  };
  AppendCommonTail(&a.config);
  return a;
}

HfArchitecture Gpt2() {
  HfArchitecture a;
  a.name = "GPT-2";
  a.class_name = "GPT2LMHeadModel";
  a.model_type = "gpt2";
  a.position = "learned";
  a.norm = "layernorm";
  a.ffn = "gelu";
  a.layouts = {"mha"};
  a.with_words = "learned positions";
  a.position_words = "has learned positions";
  a.spec_words = "a learned-position spec";
  a.layouts_fix = "GPT-2 has multi-head attention only (\"mha\"); grouped heads need rope for Llama";
  a.read_options = ReadGpt2Options;
  a.every_bias = true;
  a.tvlab_layer = "decoder.layers.";
  a.hf_layer = "transformer.h.";
  a.first = {{{"embedding"}, "transformer.wte", HfLayout::kEmbedding}, {{"position"}, "transformer.wpe"}};
  a.layer = {{{"attention.w_q", "attention.w_k", "attention.w_v"}, "attn.c_attn", HfLayout::kConv1d, HfBias::kModel},
             {{"attention.w_o"}, "attn.c_proj", HfLayout::kConv1d, HfBias::kModel},
             {{"ffn.w_1"}, "mlp.c_fc", HfLayout::kConv1d, HfBias::kModel},
             {{"ffn.w_2"}, "mlp.c_proj", HfLayout::kConv1d, HfBias::kModel},
             {{"attention_residual.norm"}, "ln_1", HfLayout::kSame, HfBias::kNorm},
             {{"ffn_residual.norm"}, "ln_2", HfLayout::kSame, HfBias::kNorm}};
  a.last = {{{"decoder.final_norm"}, "transformer.ln_f", HfLayout::kSame, HfBias::kNorm}, {{"head"}, "lm_head"}};
  a.config = {
      Fixed("architectures", absl::StrCat("[", Text(a.class_name), "]")),
      Fixed("model_type", Text(a.model_type)),
      Compared("vocab_size", [](const Values& v) { return absl::StrCat(v.vocab); }, "the task's vocabulary"),
      Compared("n_embd", [](const Values& v) { return absl::StrCat(v.d_model); }, "model.d_model"),
      Compared("n_layer", [](const Values& v) { return absl::StrCat(v.layers); }, "model.num_layers"),
      Compared("n_head", [](const Values& v) { return absl::StrCat(v.heads); }, "model.num_heads"),
      Compared("n_inner", [](const Values& v) { return absl::StrCat(v.d_ff); }, "model.d_ff"),
      Compared("n_positions", [](const Values& v) { return absl::StrCat(v.positions); }, "model.max_seq_len"),
      Written("n_ctx", [](const Values& v) { return absl::StrCat(v.positions); }),
      Compared("activation_function", [](const Values& v) { return Text(v.gelu_tanh ? "gelu_new" : "gelu"); },
               "model.ffn.options tanh_approximation"),
      Compared("layer_norm_epsilon", [](const Values& v) { return Number(v.norm_eps); }, "model.norm.options eps"),
      Written("resid_pdrop", [](const Values& v) { return Number(v.dropout); }),
      Written("embd_pdrop", [](const Values& v) { return Number(v.dropout); }),
      Written("attn_pdrop", [](const Values& v) { return Number(v.dropout); }),
      Compared("scale_attn_weights", [](const Values&) { return std::string("true"); }),
      Compared("scale_attn_by_inverse_layer_idx", [](const Values&) { return std::string("false"); }),
      Compared("reorder_and_upcast_attn", [](const Values&) { return std::string("false"); }),
  };
  AppendCommonTail(&a.config);
  for (HfConfigKey& k : a.config)
    if (k.key == "n_inner") k.null_is_times_hidden = 4;  // HF's default: 4 * n_embd
  return a;
}

}  // namespace

const std::vector<HfArchitecture>& HfArchitectures() {
  static const auto* architectures = new std::vector<HfArchitecture>{Llama(), Gpt2()};  // never destroyed
  return *architectures;
}

absl::Status CheckLayersAlike(const ModelSpec& m, const std::string& what) {
  if (m.layer_overrides_size() == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      what, ": model.layer_overrides (", m.layer_overrides_size(),
      ") gives some layers other settings, and Hugging Face Llama and GPT-2 configs have one "
      "attention, position, norm and FFN for every layer; export covers runs without per-layer patterns"));
}

const HfArchitecture* HfArchitectureFor(const std::string& position) {
  for (const HfArchitecture& a : HfArchitectures())
    if (a.position == position) return &a;
  return nullptr;
}

const HfArchitecture& OtherHfArchitecture(const HfArchitecture& arch) {
  const std::vector<HfArchitecture>& all = HfArchitectures();
  return &arch == &all[0] ? all[1] : all[0];
}

std::string HfConfigJson(const HfArchitecture& arch, const HfConfigValues& values) {
  std::vector<std::string> lines;
  for (const HfConfigKey& k : arch.config) lines.push_back(absl::StrCat("  \"", k.key, "\": ", k.json(values)));
  return absl::StrCat("{\n", absl::StrJoin(lines, ",\n"), "\n}\n");
}

}  // namespace tvlab
