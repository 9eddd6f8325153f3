#ifndef TVLAB_FRAMEWORK_SPEC_SPEC_OVERRIDES_H_
#define TVLAB_FRAMEWORK_SPEC_SPEC_OVERRIDES_H_

// --set field.path=value on an Experiment.

#include <string>

#include "absl/status/status.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Applies "field.path=value" (e.g. "model.attention.layout=gqa",
// "model.attention.layout_options.num_kv_heads=2", "task.options.length=6").
// The path is walked with the message descriptors (errors list a message's
// fields); the value is parsed by protobuf's text format for that field.
// Changing a plugin name clears options that belonged to the previous
// plugin; a path through a plugin's options Any first resolves defaults so
// the Any holds the plugin's options type.
absl::Status ApplyOverride(Experiment* spec, const std::string& assignment);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SPEC_SPEC_OVERRIDES_H_
