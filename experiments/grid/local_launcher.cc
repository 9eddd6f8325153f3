// --launcher local (the default): the planned runs as child processes of
// this one, --jobs at a time (grid_runner.h).

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "experiments/grid/grid_runner.h"
#include "experiments/grid/launcher.h"

ABSL_FLAG(int, jobs, 1, "N: grid only: runs trained at once, each in its own process (default 1)");

namespace tvlab {
namespace {

class LocalLauncher : public Launcher {
 public:
  LocalLauncher(int jobs, const LauncherContext& context) : jobs_(jobs), context_(context) {}

  absl::StatusOr<LaunchOutcome> Launch(const LaunchRequest& request) override {
    GridRunnerOptions runner;
    runner.run_binary = request.run_binary;
    runner.jobs = jobs_;
    runner.progress = context_.progress;
    runner.interactive = context_.interactive;
    GridRunSummary summary = RunGrid(*request.plan, runner);
    LaunchOutcome outcome;
    outcome.state = summary.interrupted ? LaunchOutcome::State::kInterrupted : LaunchOutcome::State::kEnded;
    return outcome;
  }

 private:
  int jobs_;
  LauncherContext context_;
};

absl::StatusOr<LauncherFactory> ReadLocalFlags(const CommandLine&) {
  const int jobs = absl::GetFlag(FLAGS_jobs);
  if (jobs < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--jobs: '", jobs, "' is not a number of processes >= 1"));
  }
  return LauncherFactory([jobs](const LauncherContext& context) {
    return std::unique_ptr<Launcher>(new LocalLauncher(jobs, context));
  });
}

LauncherKind LocalKind() {
  LauncherKind kind;
  kind.name = "local";
  kind.flags = {"--jobs"};
  kind.synopsis = {"[--jobs N]"};
  kind.summary = "the default: child processes here, --jobs at a time";
  kind.read_flags = ReadLocalFlags;
  return kind;
}

}  // namespace

REGISTER_GRID_LAUNCHER(LocalKind);

}  // namespace tvlab
