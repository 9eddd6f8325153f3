#ifndef TVLAB_FRAMEWORK_INTERFACES_PLUGIN_KINDS_H_
#define TVLAB_FRAMEWORK_INTERFACES_PLUGIN_KINDS_H_

// The one table of plugin kinds. Each row says where a kind is named in a
// spec, its default plugin, its folder, and how to reach its registry; spec
// defaults, option resolution, validation, capabilities, --set, building,
// --list_plugins, the census test and docs/plugins all read this table, so
// a kind is listed once (plugin_kinds.cc).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/interfaces/model_dims.h"
#include "framework/schema/experiment.pb.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/message.h"

namespace tvlab {

// What validation knows when it checks one plugin's options.
struct PluginValidationArgs {
  ModelDims dims;
  ModelSpec::Family family = ModelSpec::FAMILY_UNSPECIFIED;
  // The whole spec, where the caller has it (an init plugin checks the
  // optimizer and model settings its parametrisation has rules for).
  const Experiment* spec = nullptr;
};

struct PluginKind {
  std::string id;             // "attention_layout": plugin.bzl's kind, census keys
  std::string display;        // "attention layout": in messages
  std::string parent_path;    // "model.attention": the message naming the plugin
  std::string name_field;     // "layout"
  std::string options_field;  // "layout_options" (a google.protobuf.Any)
  // The plugin a spec gets when it names none; "" = the spec must name one.
  std::string default_plugin;
  std::string folder;         // "plugins/attention" (its registry's): a sub-folder per plugin

  // Registered names, sorted.
  std::function<std::vector<std::string>()> names;
  // The options prototype of a registered plugin; NotFound lists the names
  // (with a "did you mean").
  std::function<absl::StatusOr<const google::protobuf::Message*>(const std::string&)> prototype;
  // Capability bits a registered plugin declares (0 for an unknown name).
  std::function<uint32_t(const std::string&)> capabilities;
  // The plugin's own Validate on its (unpacked) options.
  std::function<absl::Status(const std::string& name, const google::protobuf::Message& options,
                             const PluginValidationArgs& args)>
      validate;

  // The plugin's own Resolve (plugin_entry.h) on its valid options: fills
  // automatic sizes in `options` and model-wide ones in args->dims. A no-op
  // for tasks and unknown names.
  std::function<void(const std::string& name, google::protobuf::Message* options,
                     PluginValidationArgs* args)>
      resolve;
  // "model.attention.layout", "model.attention.layout_options".
  std::string name_path() const { return parent_path + "." + name_field; }
  std::string options_path() const { return parent_path + "." + options_field; }
};

// Every kind, in the order --list_plugins prints them.
const std::vector<PluginKind>& PluginKinds();
// The row with `id`; aborts on an unknown id (a programming error).
const PluginKind& PluginKindById(absl::string_view id);

// The plugin name and options Any a spec holds for `kind` (spec must hold
// the parent message path; read-only access).
std::string PluginNameIn(const Experiment& spec, const PluginKind& kind);
const google::protobuf::Any& PluginOptionsIn(const Experiment& spec, const PluginKind& kind);
// Mutable access (creates the parent messages).
google::protobuf::Message* MutableParentIn(Experiment* spec, const PluginKind& kind);

// The options of the plugin `spec` names for `kind`, unpacked into a fresh
// message of the plugin's options type (empty Any = defaults). Errors name
// the field path: an unknown plugin, options of another plugin's type.
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> UnpackPluginOptions(
    const Experiment& spec, const PluginKind& kind);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_INTERFACES_PLUGIN_KINDS_H_
