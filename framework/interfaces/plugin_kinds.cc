#include "framework/interfaces/plugin_kinds.h"

#include "absl/strings/str_split.h"
#include "framework/core/check.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/attention_score.h"
#include "framework/interfaces/ffn.h"
#include "framework/interfaces/init.h"
#include "framework/interfaces/norm_placement.h"
#include "framework/interfaces/normalization.h"
#include "framework/interfaces/optimizer.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/interfaces/position_encoding.h"
#include "framework/interfaces/schedule.h"
#include "framework/interfaces/task.h"

namespace tvlab {
namespace {

// The arguments each kind's Validate takes, from what validation knows.
const ModelDims& ArgsFor(const PluginValidationArgs& a, const ModelDims*) { return a.dims; }
PlacementArgs ArgsFor(const PluginValidationArgs& a, const PlacementArgs*) {
  PlacementArgs args;
  args.dims = a.dims;
  return args;
}
// An optimizer's options are checked alone (its parameters come later).
OptimizerArgs ArgsFor(const PluginValidationArgs&, const OptimizerArgs*) { return {}; }
ScheduleArgs ArgsFor(const PluginValidationArgs&, const ScheduleArgs*) { return {}; }
InitArgs ArgsFor(const PluginValidationArgs& a, const InitArgs*) { return InitArgs{a.dims, a.spec}; }
TaskArgs ArgsFor(const PluginValidationArgs& a, const TaskArgs*) {
  TaskArgs args;
  args.family = a.family;
  return args;
}

// Runs a plugin's Resolve with the arguments of its kind, writing back what
// it resolved into the model dims.
void ResolveWith(const std::function<void(google::protobuf::Message*, ModelDims*)>& resolve,
                 google::protobuf::Message* options, PluginValidationArgs* args) {
  resolve(options, &args->dims);
}
void ResolveWith(const std::function<void(google::protobuf::Message*, PlacementArgs*)>& resolve,
                 google::protobuf::Message* options, PluginValidationArgs* args) {
  PlacementArgs placement;
  placement.dims = args->dims;
  resolve(options, &placement);
  args->dims = placement.dims;
}

void ResolveWith(const std::function<void(google::protobuf::Message*, OptimizerArgs*)>& resolve,
                 google::protobuf::Message* options, PluginValidationArgs*) {
  OptimizerArgs unused;
  resolve(options, &unused);
}

void ResolveWith(const std::function<void(google::protobuf::Message*, ScheduleArgs*)>& resolve,
                 google::protobuf::Message* options, PluginValidationArgs*) {
  ScheduleArgs unused;
  resolve(options, &unused);
}

void ResolveWith(const std::function<void(google::protobuf::Message*, InitArgs*)>& resolve,
                 google::protobuf::Message* options, PluginValidationArgs* args) {
  InitArgs init{args->dims, args->spec};
  resolve(options, &init);
}

template <typename Entry>
uint32_t CapabilitiesOf(const Entry& entry) {
  if constexpr (std::is_same_v<Entry, TaskEntry>) {
    return 0;
  } else {
    return entry.capabilities;
  }
}
template <typename Entry>
struct ArgsTypeOf {
  using type = typename Entry::ArgsType;
};
template <>
struct ArgsTypeOf<TaskEntry> {
  using type = TaskArgs;
};

template <typename Entry>
PluginKind Kind(std::string id, std::string display, std::string parent, std::string name_field,
                std::string options_field, std::string default_plugin,
                Registry<Entry>& (*registry)()) {
  PluginKind k;
  k.id = std::move(id);
  k.display = std::move(display);
  k.parent_path = std::move(parent);
  k.name_field = std::move(name_field);
  k.options_field = std::move(options_field);
  k.default_plugin = std::move(default_plugin);
  k.folder = registry().folder();
  k.names = [registry] { return registry().Names(); };
  k.prototype = [registry](const std::string& name)
      -> absl::StatusOr<const google::protobuf::Message*> {
    auto entry = registry().Get(name);
    if (!entry.ok()) return entry.status();
    return (*entry)->default_options;
  };
  k.capabilities = [registry](const std::string& name) -> uint32_t {
    auto entry = registry().Get(name);
    return entry.ok() ? CapabilitiesOf(**entry) : 0;
  };
  k.validate = [registry](const std::string& name, const google::protobuf::Message& options,
                          const PluginValidationArgs& args) -> absl::Status {
    auto entry = registry().Get(name);
    if (!entry.ok()) return entry.status();
    using Args = typename ArgsTypeOf<Entry>::type;
    return (*entry)->validate(options, ArgsFor(args, static_cast<const Args*>(nullptr)));
  };
  k.resolve = [registry](const std::string& name, google::protobuf::Message* options,
                         PluginValidationArgs* args) {
    if constexpr (!std::is_same_v<Entry, TaskEntry>) {
      auto entry = registry().Get(name);
      if (entry.ok()) ResolveWith((*entry)->resolve, options, args);
    }
  };
  return k;
}

}  // namespace

const std::vector<PluginKind>& PluginKinds() {
  // id, display, parent path, name field, options field, default, registry
  // (which knows the kind's folder: registries.cc, task.cc)
  static const auto* kinds = new std::vector<PluginKind>{
      Kind("attention_score", "attention score", "model.attention", "score", "score_options",
           "scaled_dot_product", &AttentionScoreRegistry),
      Kind("attention_layout", "attention layout", "model.attention", "layout",
           "layout_options", "mha", &AttentionLayoutRegistry),
      Kind("position", "position encoding", "model.position", "plugin", "options", "sinusoidal",
           &PositionEncodingRegistry),
      Kind("normalization", "normalization", "model.norm", "plugin", "options", "layernorm",
           &NormalizationRegistry),
      Kind("placement", "norm placement", "model.norm", "placement", "placement_options",
           "pre_ln", &NormPlacementRegistry),
      Kind("ffn", "ffn", "model.ffn", "plugin", "options", "relu", &FfnRegistry),
      Kind("task", "task", "task", "plugin", "options", /*default_plugin=*/"", &TaskRegistry),
      Kind("optimizer", "optimizer", "train.optimizer", "plugin", "options", "adamw",
           &OptimizerRegistry),
      Kind("schedule", "schedule", "train.lr_schedule", "plugin", "options", "constant",
           &ScheduleRegistry),
      Kind("init", "initialisation", "model.init", "plugin", "options", "default", &InitRegistry),
  };
  return *kinds;
}

const PluginKind& PluginKindById(absl::string_view id) {
  for (const PluginKind& k : PluginKinds())
    if (k.id == id) return k;
  TVLAB_CHECK(false) << "no plugin kind '" << std::string(id) << "'";
  return PluginKinds().front();
}

namespace {
const google::protobuf::Message& ParentIn(const Experiment& spec, const PluginKind& kind) {
  const google::protobuf::Message* m = &spec;
  for (absl::string_view part : absl::StrSplit(kind.parent_path, '.')) {
    const auto* field = m->GetDescriptor()->FindFieldByName(std::string(part));
    TVLAB_CHECK(field != nullptr && field->message_type() != nullptr) << kind.parent_path;
    m = &m->GetReflection()->GetMessage(*m, field);
  }
  return *m;
}
}  // namespace

google::protobuf::Message* MutableParentIn(Experiment* spec, const PluginKind& kind) {
  google::protobuf::Message* m = spec;
  for (absl::string_view part : absl::StrSplit(kind.parent_path, '.')) {
    const auto* field = m->GetDescriptor()->FindFieldByName(std::string(part));
    TVLAB_CHECK(field != nullptr && field->message_type() != nullptr) << kind.parent_path;
    m = m->GetReflection()->MutableMessage(m, field);
  }
  return m;
}

std::string PluginNameIn(const Experiment& spec, const PluginKind& kind) {
  const google::protobuf::Message& parent = ParentIn(spec, kind);
  return parent.GetReflection()->GetString(
      parent, parent.GetDescriptor()->FindFieldByName(kind.name_field));
}

const google::protobuf::Any& PluginOptionsIn(const Experiment& spec, const PluginKind& kind) {
  const google::protobuf::Message& parent = ParentIn(spec, kind);
  return static_cast<const google::protobuf::Any&>(parent.GetReflection()->GetMessage(
      parent, parent.GetDescriptor()->FindFieldByName(kind.options_field)));
}

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> UnpackPluginOptions(
    const Experiment& spec, const PluginKind& kind) {
  const std::string name = PluginNameIn(spec, kind);
  auto prototype = kind.prototype(name);
  if (!prototype.ok())
    return absl::Status(prototype.status().code(),
                        kind.name_path() + ": " + std::string(prototype.status().message()));
  return UnpackOptions(PluginOptionsIn(spec, kind), **prototype, name, kind.options_path());
}

}  // namespace tvlab
