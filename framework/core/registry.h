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

template <typename Entry>
class Registry {
 public:
  // `kind` names the plugin kind in messages ("attention score").
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

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
  // registered names and the closest one.
  absl::StatusOr<const Entry*> Get(const std::string& name) const {
    auto it = entries_.find(name);
    if (it != entries_.end()) return &it->second;
    std::string hint;
    int best = 1 << 30;
    for (const auto& [known, unused] : entries_) {
      int d = EditDistance(name, known);
      if (d < best) best = d, hint = known;
    }
    std::string message = absl::StrCat("unknown ", kind_, " plugin '", name,
                                       "'; registered: ", absl::StrJoin(Names(), ", "));
    if (!hint.empty() && best <= 3) absl::StrAppend(&message, " (did you mean '", hint, "'?)");
    return absl::NotFoundError(message);
  }

  bool Contains(const std::string& name) const { return entries_.count(name) > 0; }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [name, unused] : entries_) names.push_back(name);
    return names;
  }

  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::map<std::string, Entry> entries_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CORE_REGISTRY_H_
