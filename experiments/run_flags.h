#ifndef TVLAB_EXPERIMENTS_RUN_FLAGS_H_
#define TVLAB_EXPERIMENTS_RUN_FLAGS_H_

// Command line of //experiments:run. Hand-parsed because --set repeats
// (absl flags keep only the last value of a repeated flag).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tvlab {

struct RunFlags {
  std::string spec_path;
  std::vector<std::string> overrides;  // --set a.b=c, in order
  std::string output_dir;
  std::string resume_dir;  // --resume RUN_DIR
  std::string init_from;   // --init_from PATH
  bool eval_only = false;
  int64_t crash_after_step = -1;  // --debug_crash_after_step (tests)
  bool list_plugins = false;
  bool help = false;
};

absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args);
extern const char kRunUsage[];

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_RUN_FLAGS_H_
