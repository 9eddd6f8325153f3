#include "experiments/cli/command_line.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tvlab {
namespace {

// Flags defined in this project, as opposed to absl's own (--flagfile, ...).
bool IsProjectFile(absl::string_view filename) { return !absl::StrContains(filename, "absl/"); }

bool IsHelp(const std::string& name) {
  return name == "help" || name == "h" || name == "helpshort" || name == "helpfull";
}

std::string Expected(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return "true or false";
  if (flag.IsOfType<int>() || flag.IsOfType<int64_t>()) return "an integer";
  if (flag.IsOfType<uint64_t>()) return "a non-negative integer";
  if (flag.IsOfType<double>() || flag.IsOfType<float>()) return "a number";
  return "a valid value";
}

// Reads argv the way absl::ParseCommandLine does, checking every flag and
// value; fills `line` with what was given.
absl::Status Check(int argc, char** argv, CommandLine* line) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;  // the rest are positional
    if (arg.size() < 2 || arg[0] != '-') continue;
    const std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t eq = body.find('=');
    std::string name = body.substr(0, eq);
    if (IsHelp(name)) {
      line->help = true;
      continue;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag != nullptr && !IsProjectFile(flag->Filename())) flag = nullptr;
    std::string value;
    if (flag == nullptr && absl::StartsWith(name, "no") && eq == std::string::npos) {
      flag = absl::FindCommandLineFlag(name.substr(2));  // --nofoo for a bool foo
      if (flag != nullptr && (!IsProjectFile(flag->Filename()) || !flag->IsOfType<bool>())) flag = nullptr;
      if (flag != nullptr) {
        name = name.substr(2);
        value = "false";
      }
    } else if (flag != nullptr && eq != std::string::npos) {
      value = body.substr(eq + 1);
    } else if (flag != nullptr && flag->IsOfType<bool>()) {
      value = "true";
    } else if (flag != nullptr) {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      value = argv[++i];
    }
    if (flag == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown flag '", arg, "'"));
    // Sets the value absl::ParseCommandLine sets again afterwards.
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": '", value, "' is not ", Expected(*flag)));
    }
    line->values[name].push_back(value);
  }
  return absl::OkStatus();
}

// absl's own usage output (absl::ProgramUsageMessage, --helpfull-style
// listings) shows the same flags as PrintHelp.
void ConfigureUsage(const std::string& usage) {
  static const bool configured = [&] {
    absl::FlagsUsageConfig config;
    config.contains_help_flags = IsProjectFile;
    config.contains_helpshort_flags = IsProjectFile;
    absl::SetFlagsUsageConfig(config);
    absl::SetProgramUsageMessage(usage);  // fatal if called twice
    return true;
  }();
  (void)configured;
}

}  // namespace

std::set<std::string> CommandLine::Given() const {
  std::set<std::string> given;
  for (const auto& [name, unused] : values) given.insert("--" + name);
  return given;
}

absl::StatusOr<CommandLine> ParseFlags(int argc, char** argv, const std::string& usage) {
  ConfigureUsage(usage);
  CommandLine line;
  if (absl::Status s = Check(argc, argv, &line); !s.ok()) return s;
  if (line.help) return line;
  // Checked above, so absl finds nothing to complain about (it would exit).
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  for (size_t i = 1; i < positional.size(); ++i) line.positional.push_back(positional[i]);
  return line;
}

void PrintHelp(std::ostream& out, const std::string& usage) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (IsProjectFile(flag->Filename())) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  out << usage << "Flags:\n";
  for (const absl::CommandLineFlag* flag : flags) {
    // Help texts state their defaults (some are "the run's own").
    out << absl::StrFormat("  --%-18s %s\n", flag->Name(), flag->Help());
  }
}

void PrintUsageError(std::ostream& out, const absl::Status& error, const std::string& usage) {
  out << "error: " << error.message() << "\n\n" << usage << "--help lists every flag.\n";
}

std::optional<int> ParseFlagsOnlyOrExit(int argc, char** argv, const std::string& usage,
                                        CommandLine* line) {
  auto parsed = ParseFlags(argc, argv, usage);
  if (!parsed.ok()) {
    PrintUsageError(std::cerr, parsed.status(), usage);
    return 2;
  }
  if (parsed->help) {
    PrintHelp(std::cout, usage);
    return 0;
  }
  if (!parsed->positional.empty()) {
    PrintUsageError(std::cerr,
                    absl::InvalidArgumentError("unexpected argument '" + parsed->positional[0] + "'"),
                    usage);
    return 2;
  }
  if (line != nullptr) *line = *std::move(parsed);
  return std::nullopt;
}

std::string UserPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace tvlab
