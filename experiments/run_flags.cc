#include "experiments/run_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tvlab {

const char kRunUsage[] =
    "usage: bazel run //experiments:run -- SPEC.pbtxt [--set field.path=value]... "
    "[--output_dir DIR]\n"
    "       bazel run //experiments:run -- --list_plugins\n"
    "       bazel run //experiments:run -- GRID.pbtxt [--jobs N] ...  (an ablation grid; "
    "--help with it, docs/grids.md)\n"
    "  SPEC.pbtxt        experiment spec in protobuf text format (see configs/)\n"
    "  --set a.b=v       override one field, e.g. --set model.num_heads=8 (repeatable)\n"
    "  --output_dir DIR  run directory (default runs/<name>/<timestamp>)\n"
    "  --resume RUN_DIR  continue an interrupted run from its latest checkpoint\n"
    "                    (no SPEC: the run's spec.resolved.pbtxt is used)\n"
    "  --init_from PATH  start from these weights (run dir, checkpoint dir or .safetensors)\n"
    "  --eval_only       evaluate the --init_from weights without training\n"
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
    } else if (a == "--resume" || absl::StartsWith(a, "--resume=")) {
      auto v = value("--resume");
      if (!v.ok()) return v.status();
      flags.resume_dir = *v;
    } else if (a == "--init_from" || absl::StartsWith(a, "--init_from=")) {
      auto v = value("--init_from");
      if (!v.ok()) return v.status();
      flags.init_from = *v;
    } else if (a == "--eval_only") {
      flags.eval_only = true;
    } else if (a == "--debug_crash_after_step" || absl::StartsWith(a, "--debug_crash_after_step=")) {
      auto v = value("--debug_crash_after_step");
      if (!v.ok()) return v.status();
      if (!absl::SimpleAtoi(*v, &flags.crash_after_step))
        return absl::InvalidArgumentError(absl::StrCat("--debug_crash_after_step: '", *v, "' is not a step"));
    } else if (absl::StartsWith(a, "-")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '", a, "'"));
    } else if (flags.spec_path.empty()) {
      flags.spec_path = a;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", a,
                                                     "': only one spec file per run"));
    }
  }
  if (!flags.resume_dir.empty()) {
    if (!flags.spec_path.empty())
      return absl::InvalidArgumentError(
          "--resume takes its spec from the run directory; drop the spec file argument");
    if (!flags.overrides.empty() || !flags.init_from.empty() || flags.eval_only)
      return absl::InvalidArgumentError("--resume cannot be combined with --set, --init_from or --eval_only");
  } else if (!flags.help && !flags.list_plugins && flags.spec_path.empty()) {
    return absl::InvalidArgumentError("no spec file given");
  }
  if (flags.eval_only && flags.init_from.empty())
    return absl::InvalidArgumentError("--eval_only needs --init_from with the weights to evaluate");
  return flags;
}

}  // namespace tvlab
