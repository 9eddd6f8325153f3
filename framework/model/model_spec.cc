#include "framework/model/model_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/model/fused_request.h"
#include "framework/model/layer_override_spec.h"
#include "framework/model/mixer_spec.h"
#include "framework/model/attention_options_spec.h"
#include "framework/model/memory_tokens.h"
#include "framework/model/multi_token.h"
#include "framework/model/value_residual.h"

namespace tvlab {
namespace {

std::string Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 1; i <= n && out.size() < 12; ++i)
    if (n % i == 0) out.push_back(i);
  return absl::StrJoin(out, ", ");
}

// A learned sink logit and the output gate have one parameter (row) per
// model head; a layout that attends with fewer heads (differential: H / 2)
// cannot use them.
void CheckPerHeadOptions(const AttentionSpec& attention, const std::string& layout,
                         uint32_t provides, Problems* problems) {
  if (!(provides & kAttendsWithFewerHeads)) return;
  const std::string why = absl::StrCat(
      "learns one per model head, but layout '", layout,
      "' attends with fewer heads than model.num_heads, so it would not match; ");
  if (attention.sink() == AttentionSpec::Sink::LEARNED)
    problems->Add(absl::StrCat("model.attention.sink: LEARNED ", why,
                               "use sink: OFF_BY_ONE (a fixed logit 0) or another layout"));
  if (attention.output_gate() != AttentionSpec::OutputGate::NONE)
    problems->Add(absl::StrCat("model.attention.output_gate ", why,
                               "remove output_gate or choose another layout"));
}

// What the position plugin needs inside attention, the layout must provide
// (framework/interfaces/capabilities.h).
void CheckCapabilities(const Experiment& spec, Problems* problems) {
  const PluginKind& position_kind = PluginKindById("position");
  const PluginKind& layout_kind = PluginKindById("attention_layout");
  const std::string position = PluginNameIn(spec, position_kind);
  const std::string layout = PluginNameIn(spec, layout_kind);
  const uint32_t needs = position_kind.capabilities(position);
  const uint32_t provides = layout_kind.capabilities(layout);
  struct Requirement {
    uint32_t need, provide;
    const char* what;
  };
  for (const Requirement& r : {Requirement{kRotatesQueriesAndKeys, kAppliesRotaryPositions,
                                           "rotates queries and keys inside attention"},
                               Requirement{kAddsLogitBias, kAppliesLogitBias,
                                           "adds a bias to attention logits"}}) {
    if ((needs & r.need) && !(provides & r.provide)) {
      problems->Add(absl::StrCat(position_kind.name_path(), ": '", position, "' ", r.what,
                                 ", but ", layout_kind.display, " '", layout,
                                 "' does not declare that it applies it, so the positions would be "
                                 "silently lost; choose another layout or position plugin"));
    }
  }
  if ((needs & kBiasPerModelHead) && (provides & kAttendsWithFewerHeads)) {
    problems->Add(absl::StrCat(position_kind.name_path(), ": '", position,
                               "' learns one bias per model head, but ", layout_kind.display, " '",
                               layout, "' attends with fewer heads than model.num_heads, so the "
                               "table would not match; choose another layout or position plugin"));
  }
  CheckPerHeadOptions(spec.model().attention(), layout, provides, problems);
}

}  // namespace

void ValidateModelPlugins(const Experiment& spec, const ModelDims& dims, Problems* problems) {
  PluginValidationArgs args;
  args.dims = dims;
  args.family = spec.model().family();
  args.spec = &spec;
  for (const PluginKind& kind : PluginKinds()) {
    // The task validates itself (data/load_task.h), the optimizer with the
    // train part (train/train_spec.h).
    if (kind.parent_path.rfind("model.", 0) != 0) continue;
    auto options = UnpackPluginOptions(spec, kind);
    if (!options.ok()) {
      problems->Add(options.status());
      continue;
    }
    const std::string name = PluginNameIn(spec, kind);
    absl::Status valid = kind.validate(name, **options, args);
    if (!valid.ok())
      problems->Add(absl::StrCat(kind.options_path(), " (", name, "): ", valid.message()));
  }
  // Attention options are checked here, per layer too (layer_overrides).
  const int64_t window = spec.model().attention().window();
  if (window < 0)
    problems->Add(absl::StrCat("model.attention.window must be >= 0 (got ", window,
                               "); 0 = full attention, W > 0 = each query sees the W nearest keys"));
  ValidateAttentionOptions(spec.model().attention(), "model.attention", problems);
  CheckCapabilities(spec, problems);
  CheckRecurrentMixer(spec, problems);
  CheckFusedRequest(spec, problems);
}

ModelDims ModelDimsFromSpec(const ModelSpec& m) {
  ModelDims d;
  d.d_model = m.d_model();
  d.num_heads = m.num_heads();
  d.head_dim = m.num_heads() > 0 ? m.d_model() / m.num_heads() : 0;
  d.d_ff = m.d_ff();
  d.num_layers = m.num_layers();
  d.max_seq_len = m.max_seq_len();
  d.dropout = m.dropout();
  d.bias = m.bias();
  d.causal = m.family() == ModelSpec::DECODER_ONLY;
  if (m.family() == ModelSpec::ENCODER_DECODER)
    d.decoder_layers = m.num_decoder_layers() > 0 ? m.num_decoder_layers() : m.num_layers();
  return d;
}

void ValidateTiedEmbeddings(const Experiment& spec, int64_t vocab, int64_t head_outputs, Problems* p) {
  const ModelSpec& m = spec.model();
  if (!m.tie_embeddings()) return;
  if (m.pooling() != ModelSpec::NONE) {
    p->Add("model.tie_embeddings ties the output head to the token embedding, but with model.pooling the head "
           "produces a classifier's classes, not the vocabulary; set tie_embeddings: false for this task");
  } else if (head_outputs != vocab) {
    p->Add(absl::StrCat("model.tie_embeddings: the task's output head has ", head_outputs,
                        " outputs but its vocabulary (the embedding table) has ", vocab,
                        " tokens; tying needs them equal: set tie_embeddings: false for this task"));
  }
}

void ValidateModelSpec(const Experiment& spec, int64_t task_length, Problems* p) {
  const ModelSpec& m = spec.model();
  if (m.family() == ModelSpec::FAMILY_UNSPECIFIED) {
    p->Add("model.family is required; set model { family: ENCODER_ONLY } (or DECODER_ONLY, "
           "ENCODER_DECODER)");
  }
  if (m.pooling() != ModelSpec::NONE && m.family() != ModelSpec::ENCODER_ONLY)
    p->Add("model.pooling applies to ENCODER_ONLY classifiers; remove it for this family");
  if (m.num_decoder_layers() < 0 ||
      (m.num_decoder_layers() > 0 && m.family() != ModelSpec::ENCODER_DECODER))
    p->Add(absl::StrCat("model.num_decoder_layers (", m.num_decoder_layers(),
                        ") is for ENCODER_DECODER models, >= 0 (0 = num_layers)"));
  p->RequirePositive("model.d_model", m.d_model(), "the width of the model, e.g. 64");
  p->RequirePositive("model.num_layers", m.num_layers(), "e.g. 2");
  p->RequirePositive("model.num_heads", m.num_heads(), "e.g. 4");
  if (m.d_model() > 0 && m.num_heads() > 0 && m.d_model() % m.num_heads() != 0) {
    p->Add(absl::StrCat("model.num_heads: d_model (", m.d_model(),
                        ") must be divisible by num_heads (", m.num_heads(),
                        "); divisors of d_model: ", Divisors(m.d_model())));
  }
  if (m.d_ff() < 0)
    p->Add(absl::StrCat("model.d_ff must be >= 0 (got ", m.d_ff(), "); 0 lets the FFN plugin choose"));
  if (!(m.dropout() >= 0.0f && m.dropout() < 1.0f))
    p->Add(absl::StrCat("model.dropout must be in [0, 1) (got ", m.dropout(), ")"));
  if (m.max_seq_len() < 0)
    p->Add(absl::StrCat("model.max_seq_len must be >= 0 (got ", m.max_seq_len(), "); 0 = the task's length"));
  ValidateMemoryTokens(spec, p);
  ValidateMultiTokenPrediction(spec, p);
  if (task_length > 0 && m.max_seq_len() > 0 && m.max_seq_len() < task_length)
    p->Add(absl::StrCat("model.max_seq_len (", m.max_seq_len(),
                        ") is shorter than the task's sequences (", task_length,
                        "); raise it or set 0"));

  const bool dims_ok = m.d_model() > 0 && m.num_heads() > 0 && m.d_model() % m.num_heads() == 0 &&
                       m.num_layers() > 0;
  if (dims_ok) {
    ModelDims dims = ModelDimsFromSpec(m);
    // Plugins see the sequence length the model will be built for.
    if (dims.max_seq_len == 0 && task_length > 0) dims.max_seq_len = task_length;
    ValidateModelPlugins(spec, dims, p);
    ValidateLayerOverrides(spec, dims, p);
    ValidateValueResidual(spec, p);
  }
}

void ValidateEvalContext(const Experiment& spec, int64_t task_length, int64_t task_eval_length,
                         Problems* p) {
  const int64_t eval_length = spec.eval().context_length();
  if (eval_length <= 0) return;
  ValidateEvalContextAt(spec, "eval.context_length", eval_length, task_length, task_eval_length, p);
}

void ValidateEvalContextAt(const Experiment& spec, const std::string& field, int64_t eval_length,
                           int64_t task_length, int64_t task_eval_length, Problems* p) {
  if (task_eval_length != eval_length) {
    p->Add(absl::StrCat(field, " (", eval_length, "): task '", spec.task().plugin(),
                        "' evaluates at its own length (", task_eval_length,
                        ") and cannot change it; remove ", field, " (language-model tasks "
                        "such as text_lm support it)"));
    return;
  }
  const PluginKind& position_kind = PluginKindById("position");
  const std::string position = PluginNameIn(spec, position_kind);
  const int64_t table = spec.model().max_seq_len() > 0 ? spec.model().max_seq_len() : task_length;
  if ((position_kind.capabilities(position) & kBoundedPositions) && table > 0 && eval_length > table) {
    p->Add(absl::StrCat(
        field, " (", eval_length, ") is past the positions '", position,
        "' has: its table has model.max_seq_len = ", table,
        " rows (the training context), and a learned position it never trained cannot be "
        "extrapolated to. Set ", field, " <= ", table,
        ", or use a position plugin that extrapolates (sinusoidal, rope, alibi or none)"));
  }
}

}  // namespace tvlab
