#ifndef TVLAB_FRAMEWORK_SPEC_PLUGIN_SLOTS_H_
#define TVLAB_FRAMEWORK_SPEC_PLUGIN_SLOTS_H_

// The places in an Experiment where a plugin is named, each with its options
// field and its registry. Resolution, validation, --list_plugins and the
// --set machinery walk this one table.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/interfaces/model_dims.h"
#include "framework/spec/experiment.pb.h"
#include "google/protobuf/message.h"

namespace tvlab {

struct PluginSlot {
  std::string kind;          // "attention layout"
  std::string parent_path;   // "model.attention"
  std::string name_field;    // "layout"
  std::string options_field; // "layout_options"
  // The options prototype of a registered plugin; NotFound lists the names.
  std::function<absl::StatusOr<const google::protobuf::Message*>(const std::string&)> prototype;
  std::function<std::vector<std::string>()> names;
  // Capability bits of a registered plugin (0 for an unknown name).
  std::function<uint32_t(const std::string&)> capabilities;
  // Runs the plugin's own Validate on its options against the model's dims.
  std::function<absl::Status(const std::string& name, const google::protobuf::Message& options,
                             const ModelDims& dims)>
      validate;
};

const std::vector<PluginSlot>& PluginSlots();

// The message at `parent_path` in `spec` (created if absent).
google::protobuf::Message* MutableMessageAt(Experiment* spec, const std::string& parent_path);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SPEC_PLUGIN_SLOTS_H_
