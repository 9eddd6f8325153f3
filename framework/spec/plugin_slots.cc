#include "framework/spec/plugin_slots.h"

#include "absl/strings/str_split.h"
#include "framework/core/check.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/attention_score.h"
#include "framework/interfaces/ffn.h"
#include "framework/interfaces/norm_placement.h"
#include "framework/interfaces/normalization.h"
#include "framework/interfaces/position_encoding.h"

namespace tvlab {
namespace {

// The arguments each kind's Validate takes.
const ModelDims& ArgsFor(const ModelDims& dims, const ModelDims*) { return dims; }
PlacementArgs ArgsFor(const ModelDims& dims, const PlacementArgs*) {
  PlacementArgs args;
  args.dims = dims;
  return args;
}

template <typename Entry>
PluginSlot Slot(std::string kind, std::string parent, std::string name_field,
                std::string options_field, Registry<Entry>& (*registry)()) {
  PluginSlot slot;
  slot.kind = std::move(kind);
  slot.parent_path = std::move(parent);
  slot.name_field = std::move(name_field);
  slot.options_field = std::move(options_field);
  slot.prototype = [registry](const std::string& name)
      -> absl::StatusOr<const google::protobuf::Message*> {
    auto entry = registry().Get(name);
    if (!entry.ok()) return entry.status();
    return (*entry)->default_options;
  };
  slot.names = [registry] { return registry().Names(); };
  slot.capabilities = [registry](const std::string& name) -> uint32_t {
    auto entry = registry().Get(name);
    return entry.ok() ? (*entry)->capabilities : 0;
  };
  slot.validate = [registry](const std::string& name, const google::protobuf::Message& options,
                             const ModelDims& dims) -> absl::Status {
    auto entry = registry().Get(name);
    if (!entry.ok()) return entry.status();
    return (*entry)->validate(options, ArgsFor(dims, static_cast<const typename Entry::ArgsType*>(nullptr)));
  };
  return slot;
}

}  // namespace

const std::vector<PluginSlot>& PluginSlots() {
  static const auto* slots = new std::vector<PluginSlot>{
      Slot("attention score", "model.attention", "score", "score_options",
           &AttentionScoreRegistry),
      Slot("attention layout", "model.attention", "layout", "layout_options",
           &AttentionLayoutRegistry),
      Slot("position encoding", "model.position", "plugin", "options",
           &PositionEncodingRegistry),
      Slot("normalization", "model.norm", "plugin", "options", &NormalizationRegistry),
      Slot("norm placement", "model.norm", "placement", "placement_options",
           &NormPlacementRegistry),
      Slot("ffn", "model.ffn", "plugin", "options", &FfnRegistry),
  };
  return *slots;
}

google::protobuf::Message* MutableMessageAt(Experiment* spec, const std::string& parent_path) {
  google::protobuf::Message* m = spec;
  for (absl::string_view part : absl::StrSplit(parent_path, '.')) {
    const auto* field = m->GetDescriptor()->FindFieldByName(std::string(part));
    TVLAB_CHECK(field != nullptr && field->message_type() != nullptr) << parent_path;
    m = m->GetReflection()->MutableMessage(m, field);
  }
  return m;
}

}  // namespace tvlab
