// --launcher local (the default): the planned runs as child processes of
// this one, --jobs at a time (grid_runner.h).

#include "experiments/grid/grid_runner.h"
#include "experiments/grid/launcher.h"

namespace tvlab {
namespace {

class LocalLauncher : public Launcher {
 public:
  explicit LocalLauncher(const LauncherOptions& options) : options_(options) {}

  absl::StatusOr<LaunchOutcome> Launch(const LaunchRequest& request) override {
    GridRunnerOptions runner;
    runner.run_binary = request.run_binary;
    runner.jobs = options_.jobs;
    runner.progress = options_.progress;
    runner.interactive = options_.interactive;
    GridRunSummary summary = RunGrid(*request.plan, runner);
    LaunchOutcome outcome;
    outcome.state = summary.interrupted ? LaunchOutcome::State::kInterrupted : LaunchOutcome::State::kEnded;
    return outcome;
  }

 private:
  LauncherOptions options_;
};

absl::StatusOr<std::unique_ptr<Launcher>> CreateLocalLauncher(const LauncherOptions& options) {
  return std::unique_ptr<Launcher>(new LocalLauncher(options));
}

}  // namespace

REGISTER_GRID_LAUNCHER("local", CreateLocalLauncher);

}  // namespace tvlab
