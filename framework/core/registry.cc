#include "framework/core/registry.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

namespace tvlab {

int EditDistance(const std::string& a, const std::string& b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

namespace {

// Plugin names are identifiers; anything else (a path) is never a folder.
bool IsIdentifier(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The workspace plugin folders are looked up in: $BUILD_WORKSPACE_DIRECTORY
// (set by `bazel run`), else the working directory, except in a test (whose
// working directory is its runfiles tree, which holds parts of folders): "".
std::string Workspace() {
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (workspace != nullptr && workspace[0] != '\0') return workspace;
  return std::getenv("TEST_SRCDIR") != nullptr ? "" : ".";
}

}  // namespace

std::string UnknownPluginMessage(const std::string& kind, const std::string& folder,
                                 const std::string& name,
                                 const std::vector<std::string>& registered) {
  std::string message = absl::StrCat("unknown ", kind, " plugin '", name, "'");
  const std::string list = absl::StrCat("registered: ", absl::StrJoin(registered, ", "));
  std::error_code error;
  const std::string plugin_folder = folder + "/" + name;
  const std::filesystem::path workspace = Workspace();
  if (!folder.empty() && IsIdentifier(name) && !workspace.empty() &&
      std::filesystem::is_directory(workspace / plugin_folder, error)) {
    if (!std::filesystem::exists(workspace / plugin_folder / "BUILD.bazel", error))
      return absl::StrCat(message, ": ", plugin_folder, "/ exists but has no BUILD.bazel, so ",
                          "Bazel does not build it; add one that calls tvlab_plugin(name = \"",
                          name, "\", ...) (docs/writing-a-plugin.md); ", list);
    return absl::StrCat(
        message, ": ", plugin_folder, "/ exists but its plugin is not in this binary. No list ",
        "needs its name: build again with `bazel` (the workspace's tools/bazel wrapper re-lists ",
        "the plugin folders); if Bazel ran without that wrapper (its real binary directly), run ",
        "`bazel shutdown` first. If it is still missing, ", plugin_folder,
        "/BUILD.bazel must call tvlab_plugin(name = \"", name, "\", ...) and its source must ",
        "register \"", name, "\"; ", list);
  }
  std::string hint;
  int best = 1 << 30;
  for (const std::string& known : registered) {
    int d = EditDistance(name, known);
    if (d < best) best = d, hint = known;
  }
  absl::StrAppend(&message, "; ", list);
  if (!hint.empty() && best <= 3) absl::StrAppend(&message, " (did you mean '", hint, "'?)");
  return message;
}

}  // namespace tvlab
