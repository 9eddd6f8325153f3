#include "experiments/grid/launcher.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tvlab {
namespace {

std::map<std::string, LauncherKind>& Registry() {
  static auto* registry = new std::map<std::string, LauncherKind>();  // never destroyed
  return *registry;
}

}  // namespace

namespace internal {
LauncherRegistrar::LauncherRegistrar(LauncherKind kind) {
  const std::string name = kind.name;
  if (!Registry().emplace(name, std::move(kind)).second) {
    std::fprintf(stderr, "fatal: grid launcher '%s' registered twice\n", name.c_str());
    std::abort();
  }
}
}  // namespace internal

std::vector<std::string> RegisteredLaunchers() {
  std::vector<std::string> names;
  for (const auto& [name, kind] : Registry()) names.push_back(name);
  return names;
}

absl::StatusOr<LauncherFactory> ReadLauncherFlags(const std::string& name, const CommandLine& line) {
  auto chosen = Registry().find(name);
  if (chosen == Registry().end()) {
    return absl::InvalidArgumentError(absl::StrCat("--launcher: no launcher named '", name,
                                                   "'; launchers: ", absl::StrJoin(RegisteredLaunchers(), ", ")));
  }
  // The chosen launcher first: it may say why another's flag makes no sense
  // with it (slurm: --jobs).
  absl::StatusOr<LauncherFactory> factory = chosen->second.read_flags(line);
  if (!factory.ok()) return factory.status();
  for (const auto& [other, kind] : Registry()) {
    if (other == name) continue;
    for (const std::string& flag : kind.flags) {
      if (line.Given().count(flag) > 0)
        return absl::InvalidArgumentError(
            absl::StrCat(flag, " is for --launcher ", other, " (the launcher is '", name, "')"));
    }
  }
  return factory;
}

std::vector<std::string> AllLauncherFlags() {
  std::set<std::string> flags;
  for (const auto& [name, kind] : Registry()) flags.insert(kind.flags.begin(), kind.flags.end());
  return {flags.begin(), flags.end()};
}

absl::Status CheckNoLauncherJobsInFlight(const std::string& output_dir) {
  for (const auto& [name, kind] : Registry()) {
    if (!kind.check_none_in_flight) continue;
    if (absl::Status idle = kind.check_none_in_flight(output_dir); !idle.ok()) return idle;
  }
  return absl::OkStatus();
}

std::string LauncherUsage(const std::string& indent) {
  constexpr size_t kColumns = 100;
  std::string out;
  for (const auto& [name, kind] : Registry()) {
    std::string line = absl::StrCat(indent, "[--launcher ", name);
    for (size_t i = 0; i < kind.synopsis.size(); ++i) {
      const std::string& part = i + 1 < kind.synopsis.size() ? kind.synopsis[i] : kind.synopsis[i] + "]";
      if (line.size() + 1 + part.size() > kColumns) {
        absl::StrAppend(&out, line, "\n");
        line = indent + " " + part;
      } else {
        absl::StrAppend(&line, " ", part);
      }
    }
    if (kind.synopsis.empty()) line += "]";
    absl::StrAppend(&out, line, "  (", kind.summary, ")\n");
  }
  return out;
}

}  // namespace tvlab
