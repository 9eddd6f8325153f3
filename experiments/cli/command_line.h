#ifndef TVLAB_EXPERIMENTS_CLI_COMMAND_LINE_H_
#define TVLAB_EXPERIMENTS_CLI_COMMAND_LINE_H_

// absl flags for the experiment binaries, with the behaviour a user of them
// expects:
//   - every mistake (unknown flag, missing or malformed value) is a Status
//     whose message names the flag, so the binary prints it with its usage
//     and exits 2 (absl::ParseCommandLine alone prints its own message and
//     exits 1);
//   - --help / -h / --helpshort / --helpfull print the binary's usage text
//     and every flag defined in this project with its help text, and exit 0
//     (absl's builtin flags, --flagfile and the like, are not offered);
//   - every occurrence of a flag is kept in order, for flags that repeat
//     (--set): absl keeps only the last value.
// Flags are defined with ABSL_FLAG anywhere in the binary's sources; the
// usage config set here lists all of them, not only the main file's.

#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tvlab {

struct CommandLine {
  std::vector<std::string> positional;  // arguments that are not flags (no argv[0])
  // Every value given for each flag, in command-line order, by flag name
  // (a bool flag given bare counts as "true").
  std::map<std::string, std::vector<std::string>> values;
  bool help = false;

  bool Has(const std::string& flag) const { return values.count(flag) > 0; }
  // The flags given, as the user typed them ("--set"), sorted.
  std::set<std::string> Given() const;
};

// Checks argv against the flags linked into the binary, then parses it with
// absl::ParseCommandLine (which sets every flag's value). `usage` is the
// program usage message (absl::SetProgramUsageMessage, once per process).
// On a mistake, returns InvalidArgument naming the flag (the process should
// then exit: flags before the mistake may be set).
absl::StatusOr<CommandLine> ParseFlags(int argc, char** argv, const std::string& usage);

// `usage`, then every flag of this project with its help text.
void PrintHelp(std::ostream& out, const std::string& usage);

// A command-line mistake: "error: <message>", the usage, and where the flags
// are explained. The binary then exits with 2.
void PrintUsageError(std::ostream& out, const absl::Status& error, const std::string& usage);

// For a tool whose arguments are flags only (export, generate): parses
// them; --help prints the help to stdout, a mistake or a positional argument
// prints the usage error to stderr. Returns the exit code to end with there
// (0 or 2), or nullopt when the flags are set and the tool goes on; then
// `*line` (when given) is what was parsed.
std::optional<int> ParseFlagsOnlyOrExit(int argc, char** argv, const std::string& usage,
                                        CommandLine* line = nullptr);

// A path as the user typed it: relative paths resolve against the directory
// `bazel run` was started from (BUILD_WORKING_DIRECTORY), else unchanged.
std::string UserPath(const std::string& path);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_CLI_COMMAND_LINE_H_
