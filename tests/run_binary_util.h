#ifndef TVLAB_TESTS_RUN_BINARY_UTIL_H_
#define TVLAB_TESTS_RUN_BINARY_UTIL_H_

// Runs //experiments:run (or another binary) as a user would, capturing exit
// code and output.

#include <string>

namespace tvlab {

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// `args` is appended to the binary's path as a shell command line.
RunResult RunBinary(const std::string& args);
// The same for the binary at `runfile` (a path inside the workspace, e.g.
// "tests/run_with_crash_hook").
RunResult RunProgram(const std::string& runfile, const std::string& args);
std::string Runfile(const std::string& path);  // path inside the workspace
std::string TempDir();
std::string ReadFile(const std::string& path);
// The step,loss,lr,grad_norm columns of <dir>/train_log.csv, one line per
// row (the time columns differ from run to run).
std::string TrainLogLosses(const std::string& dir);
// A number field from a flat JSON object such as metrics.json.
double JsonNumber(const std::string& json, const std::string& key);

}  // namespace tvlab

#endif  // TVLAB_TESTS_RUN_BINARY_UTIL_H_
