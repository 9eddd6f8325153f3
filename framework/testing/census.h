#ifndef TVLAB_FRAMEWORK_TESTING_CENSUS_H_
#define TVLAB_FRAMEWORK_TESTING_CENSUS_H_

// Which plugin a conformance test is about. tvlab_plugin() (plugins/plugin.bzl)
// generates a source defining kPluginUnderTest and kKindUnderTest (a kind id
// of framework/interfaces/plugin_kinds.h) for <name>_conformance_test; tests
// that run a suite over every linked plugin define neither (both "").

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tvlab {

extern const char kPluginUnderTest[];
extern const char kKindUnderTest[];

// The plugins of `kind` a suite should check: just the plugin under test
// when it is of that kind (whether or not it is registered, so a lost
// registration fails instead of testing another plugin), else every
// registered one.
std::vector<std::string> PluginsUnderTest(absl::string_view kind);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TESTING_CENSUS_H_
