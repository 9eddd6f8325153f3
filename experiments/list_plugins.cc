#include "experiments/list_plugins.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"
#include "google/protobuf/descriptor.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {
namespace {

// "base, pairing, scaling { method, factor }": the fields of an options
// message, a nested message's own in braces.
std::string OptionFields(const google::protobuf::Descriptor& message, int depth = 0) {
  std::vector<std::string> fields;
  for (int i = 0; i < message.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& f = *message.field(i);
    if (f.type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE && depth < 2)
      fields.push_back(absl::StrCat(f.name(), " { ", OptionFields(*f.message_type(), depth + 1), " }"));
    else
      fields.push_back(f.name());
  }
  return absl::StrJoin(fields, ", ");
}

// "  options (model.position.options): rope { base, ... }; alibi { max_bias }"
// for the kind's plugins that have options, or "" if none has.
std::string OptionsLine(const PluginKind& kind) {
  std::vector<std::string> plugins;
  for (const std::string& name : kind.names()) {
    auto prototype = kind.prototype(name);
    if (!prototype.ok() || (*prototype)->GetDescriptor()->field_count() == 0) continue;
    plugins.push_back(absl::StrCat(name, " { ", OptionFields(*(*prototype)->GetDescriptor()), " }"));
  }
  if (plugins.empty()) return "";
  return absl::StrCat("  options (", kind.options_path(), "): ", absl::StrJoin(plugins, "; "), "\n");
}

// The attention options every layout honours (model.attention fields 6..9,
// framework/attention/attention_extras.h), their values read from the
// schema: "logit_softcap (float, 0 = off), sink NONE|OFF_BY_ONE|LEARNED, ...".
std::string AttentionOptionsLine() {
  const google::protobuf::Descriptor* d = AttentionSpec::descriptor();
  std::vector<std::string> options;
  for (const char* field : {"logit_softcap", "sink", "qk_norm", "output_gate"}) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByName(field);
    if (f->enum_type() == nullptr) {
      options.push_back(absl::StrCat(field, " (float, 0 = off)"));
      continue;
    }
    std::vector<std::string> values;
    for (int i = 0; i < f->enum_type()->value_count(); ++i)
      values.push_back(f->enum_type()->value(i)->name());
    options.push_back(absl::StrCat(field, " ", absl::StrJoin(values, "|")));
  }
  return absl::StrCat("attention options (model.attention, every softmax layout, all fuse: soft-cap and "
                      "sink inside the fused kernel): ",
                      absl::StrJoin(options, ", "),
                      "; a LEARNED sink and the gate (one parameter per model head) not with a "
                      "layout that attends with fewer heads (differential)");
}

}  // namespace

// One line per kind of the kind table (with its spec field and default),
// and one with the option fields of its plugins, then the backends.
void ListPlugins(std::ostream& out) {
  for (const PluginKind& kind : PluginKinds()) {
    out << kind.display << " (" << kind.name_path();
    if (!kind.default_plugin.empty()) out << ", default " << kind.default_plugin;
    out << "): " << absl::StrJoin(kind.names(), ", ") << "\n" << OptionsLine(kind);
  }
  out << "backend (runtime.backend): " << absl::StrJoin(RegisteredBackends(), ", ") << "\n";
  // The GEMM precisions each usable backend runs (runtime.precision), from
  // the descriptors: no backend is constructed.
  std::vector<std::string> precisions;
  for (const std::string& name : UsableBackends())
    precisions.push_back(
        absl::StrCat(name, " ", absl::StrJoin((*FindBackend(name))->PrecisionNames(), "|")));
  out << "precision (runtime.precision, default fp32): " << absl::StrJoin(precisions, "; ")
      << "\n";
  // Which plugins the fused attention kernel serves (runtime.attention): a
  // score or position that declares `bit`, a layout that does not declare
  // kNeverFusesLayout.
  auto fusable = [](const char* kind_id, uint32_t bit, bool declared_fuses = true) {
    const PluginKind& kind = PluginKindById(kind_id);
    std::vector<std::string> fused, unfused;
    for (const std::string& name : kind.names())
      (((kind.capabilities(name) & bit) != 0) == declared_fuses ? fused : unfused).push_back(name);
    return absl::StrCat(kind.display, "s ", absl::StrJoin(fused, ", "),
                        unfused.empty() ? "" : absl::StrCat(" (not ", absl::StrJoin(unfused, ", "), ")"));
  };
  std::vector<std::string> backends;
  for (const std::string& name : UsableBackends())
    if ((*FindBackend(name))->Implements(Kernel::kFusedAttention)) backends.push_back(name);
  out << "fused attention (runtime.attention auto|fused|unfused): "
      << fusable("attention_score", kFusableScore) << "; " << fusable("position", kFusablePosition) << "; "
      << fusable("attention_layout", kNeverFusesLayout, /*declared_fuses=*/false) << "; backends "
      << absl::StrJoin(backends, ", ") << "; a combination (per layer) fuses when its score, position and "
      << "layout all do, and \"fused\" is refused otherwise\n";
  out << "attention window (model.attention.window, default 0 = full attention): W > 0 lets "
         "each self-attention query see W keys (causal: itself and W - 1 before it); every "
         "score, softmax layout and position; fuses wherever the score and position do; the KV cache "
         "holds at most W tokens\n";
  out << AttentionOptionsLine() << "\n";
  std::vector<std::string> mixers;
  const PluginKind& layouts = PluginKindById("attention_layout");
  for (const std::string& name : layouts.names())
    if (layouts.capabilities(name) & kRecurrentMixer) mixers.push_back(name);
  out << "recurrent mixers (attention layouts with a fixed-size decoding state instead of a KV cache; "
         "causal self-attention, no score, window or attention option; docs/mixers.md): "
      << absl::StrJoin(mixers, ", ") << "\n";
}

}  // namespace tvlab
