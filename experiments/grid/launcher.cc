#include "experiments/grid/launcher.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tvlab {
namespace {

std::map<std::string, LauncherFactory>& Registry() {
  static auto* registry = new std::map<std::string, LauncherFactory>();  // never destroyed
  return *registry;
}

}  // namespace

namespace internal {
LauncherRegistrar::LauncherRegistrar(const char* name, LauncherFactory factory) {
  if (!Registry().emplace(name, std::move(factory)).second) {
    std::fprintf(stderr, "fatal: grid launcher '%s' registered twice\n", name);
    std::abort();
  }
}
}  // namespace internal

std::vector<std::string> RegisteredLaunchers() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Registry()) names.push_back(name);
  return names;
}

absl::StatusOr<std::unique_ptr<Launcher>> CreateLauncher(const std::string& name, const LauncherOptions& options) {
  auto it = Registry().find(name);
  if (it == Registry().end()) {
    return absl::NotFoundError(absl::StrCat("--launcher: no launcher named '", name,
                                            "'; launchers: ", absl::StrJoin(RegisteredLaunchers(), ", ")));
  }
  return it->second(options);
}

}  // namespace tvlab
