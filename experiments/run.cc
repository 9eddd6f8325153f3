// bazel run //experiments:run -- spec.pbtxt [--set a.b=c]... [--output_dir DIR]
// bazel run //experiments:run -- --resume RUN_DIR
// bazel run //experiments:run -- GRID.pbtxt [--jobs N] ...  (a grid: docs/grids.md)
//
// Validates the whole spec, trains, evaluates and leaves a run directory.
// Exit codes: 0 success, 2 bad command line or spec, 1 failure while running.

#include <malloc.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_join.h"
#include "experiments/grid/grid_main.h"
#include "experiments/run_flags.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/plugin_kinds.h"
#include "experiments/spec/spec_loader.h"
#include "framework/train/trainer.h"

namespace {

// Paths typed by the user are relative to where they ran `bazel run`.
std::string UserPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

std::string Timestamp() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::localtime(&now));
  return buf;
}

// One line per kind of the kind table, then the backends.
void ListPlugins() {
  for (const tvlab::PluginKind& kind : tvlab::PluginKinds()) {
    std::cout << kind.display << " (" << kind.name_path();
    if (!kind.default_plugin.empty()) std::cout << ", default " << kind.default_plugin;
    std::cout << "): " << absl::StrJoin(kind.names(), ", ") << "\n";
  }
  std::cout << "backend (runtime.backend): " << absl::StrJoin(tvlab::RegisteredBackends(), ", ")
            << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Training allocates and frees the same large activation buffers every
  // step; keep them in the heap instead of mmap/munmap (page faults) per step.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  const std::vector<std::string> args(argv + 1, argv + argc);
  // A grid spec trains many runs, each by this same binary in its own process.
  if (tvlab::IsGridCommand(args)) return tvlab::GridMain(args, std::filesystem::read_symlink("/proc/self/exe"));
  auto flags = tvlab::ParseRunFlags(args);
  if (!flags.ok()) {
    std::cerr << "error: " << flags.status().message() << "\n\n" << tvlab::kRunUsage;
    return 2;
  }
  if (flags->help) {
    std::cout << tvlab::kRunUsage;
    return 0;
  }
  if (flags->list_plugins) {
    ListPlugins();
    return 0;
  }
  const bool resume = !flags->resume_dir.empty();
  const std::string spec_path =
      resume ? UserPath(flags->resume_dir) + "/spec.resolved.pbtxt" : UserPath(flags->spec_path);
  auto spec = tvlab::LoadExperiment(spec_path, flags->overrides);
  if (!spec.ok()) {
    std::cerr << "error: " << spec.status().message() << "\n";
    return 2;
  }
  std::string run_dir = resume ? UserPath(flags->resume_dir)
                        : flags->output_dir.empty()
                            ? UserPath("runs/" + spec->name() + "/" + Timestamp())
                            : UserPath(flags->output_dir);
  if (std::filesystem::exists(run_dir + "/metrics.json")) {
    std::cerr << "error: " << run_dir
              << " already holds a finished run (metrics.json); "
              << (resume ? "there is nothing to resume" : "choose another --output_dir") << "\n";
    return 2;
  }
  tvlab::RunOptions options;
  options.resume = resume;
  options.init_from = flags->init_from.empty() ? "" : UserPath(flags->init_from);
  options.eval_only = flags->eval_only;
  options.crash_after_step = flags->crash_after_step;
  auto metrics = tvlab::RunExperiment(*spec, run_dir, std::cerr, options);
  if (!metrics.ok()) {
    std::cerr << "error: " << metrics.status().message() << "\n";
    return 1;
  }
  std::cout << "token_accuracy " << metrics->token_accuracy() << "\n"
            << "sequence_accuracy " << metrics->sequence_accuracy() << "\n"
            << "final_train_loss " << metrics->final_train_loss() << "\n"
            << "parameters " << metrics->parameters() << "\n"
            << "train_seconds " << metrics->train_seconds() << "\n"
            << "run directory: " << run_dir << "\n";
  return 0;
}
