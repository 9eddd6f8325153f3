#include "experiments/run_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tvlab {

const char kRunUsage[] =
    "usage: bazel run //experiments:run -- SPEC.pbtxt [--set field.path=value]... "
    "[--output_dir DIR]\n"
    "       bazel run //experiments:run -- --list_plugins\n"
    "  SPEC.pbtxt        experiment spec in protobuf text format (see configs/)\n"
    "  --set a.b=v       override one field, e.g. --set model.num_heads=8 (repeatable)\n"
    "  --output_dir DIR  run directory (default runs/<name>/<timestamp>)\n"
    "  --list_plugins    print the registered plugins by kind\n"
    "Relative paths resolve against the directory you ran bazel from.\n";

absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args) {
  RunFlags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& name) -> absl::StatusOr<std::string> {
      if (absl::StartsWith(a, name + "=")) return a.substr(name.size() + 1);
      if (i + 1 >= args.size())
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      flags.help = true;
    } else if (a == "--list_plugins") {
      flags.list_plugins = true;
    } else if (a == "--set" || absl::StartsWith(a, "--set=")) {
      auto v = value("--set");
      if (!v.ok()) return v.status();
      flags.overrides.push_back(*v);
    } else if (a == "--output_dir" || absl::StartsWith(a, "--output_dir=")) {
      auto v = value("--output_dir");
      if (!v.ok()) return v.status();
      flags.output_dir = *v;
    } else if (absl::StartsWith(a, "-")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '", a, "'"));
    } else if (flags.spec_path.empty()) {
      flags.spec_path = a;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", a,
                                                     "': only one spec file per run"));
    }
  }
  if (!flags.help && !flags.list_plugins && flags.spec_path.empty())
    return absl::InvalidArgumentError("no spec file given");
  return flags;
}

}  // namespace tvlab
