#ifndef TVLAB_FRAMEWORK_CORE_REGISTRY_H_
#define TVLAB_FRAMEWORK_CORE_REGISTRY_H_

// A name -> entry registry, one per plugin kind. Entries are added by static
// registrars (one line per plugin) before main() runs; lookups happen after.
//
// Thread-safety: registration is single-threaded (static initialisation);
// lookups are read-only afterwards.

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tvlab {

// Levenshtein distance, for "did you mean" hints on unknown names.
int EditDistance(const std::string& a, const std::string& b);

// The message for a `kind` plugin `name` that is not registered. If the
// plugin's folder, `folder`/`name`/, exists (relative to
// $BUILD_WORKSPACE_DIRECTORY under `bazel run`, else to the working
// directory; not looked for in a test, which runs in its runfiles), the
// plugin was written but is not in this binary, and the
// message says how to rebuild it in; otherwise it lists `registered` with
// the closest name as a "did you mean" for a typo.
std::string UnknownPluginMessage(const std::string& kind, const std::string& folder,
                                 const std::string& name,
                                 const std::vector<std::string>& registered);

template <typename Entry>
class Registry {
 public:
  // `kind` names the plugin kind in messages ("attention score"); `folder`
  // is where its plugins live ("plugins/score"; "" for none), one folder per
  // plugin, named as the plugin.
  explicit Registry(std::string kind, std::string folder = "")
      : kind_(std::move(kind)), folder_(std::move(folder)) {}

  // Adds an entry. A duplicate name is a programming error caught at start-up.
  bool Register(const std::string& name, Entry entry) {
    if (!entries_.emplace(name, std::move(entry)).second) {
      std::cerr << "tvlab: two " << kind_ << " plugins registered as '" << name
                << "'; plugin names must be unique" << std::endl;
      std::abort();
    }
    return true;
  }

  // On success returns the entry. On failure returns NotFound listing the
  // registered names, with UnknownPluginMessage's advice.
  absl::StatusOr<const Entry*> Get(const std::string& name) const {
    auto it = entries_.find(name);
    if (it != entries_.end()) return &it->second;
    return absl::NotFoundError(UnknownPluginMessage(kind_, folder_, name, Names()));
  }

  bool Contains(const std::string& name) const { return entries_.count(name) > 0; }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [name, unused] : entries_) names.push_back(name);
    return names;
  }

  const std::string& kind() const { return kind_; }
  const std::string& folder() const { return folder_; }

 private:
  std::string kind_;
  std::string folder_;
  std::map<std::string, Entry> entries_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CORE_REGISTRY_H_
