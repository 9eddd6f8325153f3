#include "tests/run_binary_util.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tvlab {

std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/tvlab/" + path;
}

std::string TempDir() { return std::getenv("TEST_TMPDIR"); }

RunResult RunBinary(const std::string& args) { return RunProgram("experiments/run", args); }

RunResult RunProgram(const std::string& runfile, const std::string& args) {
  std::string command = Runfile(runfile) + " " + args + " 2>&1";
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TrainLogLosses(const std::string& dir) {
  std::ifstream in(dir + "/train_log.csv");
  std::string line, out;
  while (std::getline(in, line)) {
    size_t cut = 0;
    for (int i = 0; i < 4; ++i) cut = line.find(',', cut + 1);
    out += line.substr(0, cut) + "\n";
  }
  return out;
}

double JsonNumber(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\"");
  if (at == std::string::npos) return -1e300;
  at = json.find(':', at);
  return std::strtod(json.c_str() + at + 1, nullptr);
}

}  // namespace tvlab
