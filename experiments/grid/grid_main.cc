#include "experiments/grid/grid_main.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "experiments/grid/expand/grid_loader.h"
#include "experiments/grid/grid_plan.h"
#include "experiments/grid/grid_runner.h"
#include "experiments/grid/report/baseline_comparison.h"
#include "experiments/grid/report/results_table.h"
#include "framework/io/dir_lock.h"
#include "framework/report/run_dir.h"
#include "framework/train/checkpoint.h"

namespace tvlab {
namespace {

// The grid file, with --output_dir applied, its metrics checked, expanded
// into validated cells. The error is the whole message.
absl::StatusOr<ExpandedGrid> LoadGrid(const GridFlags& flags) {
  auto spec = ParseGridFile(flags.grid_path);
  if (!spec.ok()) return spec.status();
  if (!flags.output_dir.empty()) spec->set_output_dir(flags.output_dir);
  absl::Status metric_ok = ValidateMainMetric(spec->main_metric());
  if (!metric_ok.ok())
    return absl::InvalidArgumentError(absl::StrCat(flags.grid_path, ": ", metric_ok.message()));
  if (spec->has_scaling()) {
    absl::Status scaling_metric = ValidateMainMetric(spec->scaling().metric());
    if (!scaling_metric.ok())
      return absl::InvalidArgumentError(absl::StrCat(flags.grid_path, ": scaling.", scaling_metric.message()));
  }
  return ExpandGrid(*spec, flags.grid_path, flags.working_dir);
}

int Report(const ExpandedGrid& grid, FileSystem* fs) {
  const GridResults results = CollectResults(grid);
  for (const std::string& warning : FewSeedsWarnings(results)) std::cerr << warning << "\n";
  auto written = WriteReport(results, fs);
  if (!written.ok()) {
    std::cerr << "error: " << written.status().message() << "\n";
    return 1;
  }
  std::stringstream text;
  // With lr_sweep the comparison at each variant's own best rate leads.
  if (grid.spec.has_lr_sweep()) text << std::ifstream(grid.results_dir + "/lr_sweep.md").rdbuf() << "\n";
  text << std::ifstream(grid.results_dir + "/results.md").rdbuf();
  std::cout << text.str() << "\nwritten: ";
  for (const std::string& f : *written) std::cout << f << " ";
  std::cout << "\n";
  return 0;
}

// The run of `cell` trained here by the local runner, so its directory
// (run.log, failed.txt) is exactly what a local grid leaves.
int RunOne(const GridCell& cell, const GridRun& run, const std::string& run_binary) {
  const RunState state = ReadRunState(run.run_dir);
  if (state == RunState::kFinished) {
    std::cerr << cell.label << " seed " << run.seed << ": already finished (" << run.run_dir << "); nothing to do\n";
    return 0;
  }
  GridPlan plan;
  PlannedRun planned;
  planned.cell = &cell;
  planned.run = &run;
  planned.retry = state == RunState::kFailed;
  planned.resume = LatestCheckpoint(run.run_dir).ok();
  plan.to_run.push_back(planned);
  plan.total = 1;
  GridRunnerOptions options;
  options.run_binary = run_binary;
  options.progress = &std::cerr;
  GridRunSummary summary = RunGrid(plan, options);
  if (summary.interrupted) return 1;
  return ReadRunState(run.run_dir) == RunState::kFinished ? 0 : 1;
}

// --run_key: one run of the grid.
int RunOneKey(const ExpandedGrid& grid, const std::string& key, const std::string& run_binary) {
  for (const GridCell& cell : grid.cells) {
    for (const GridRun& run : cell.runs) {
      if (run.key != key) continue;
      if (!cell.invalid_reason.empty()) {
        std::cerr << "error: --run_key " << key << ": cell '" << cell.label << "' is invalid: "
                  << cell.invalid_reason << "\n";
        return 2;
      }
      return RunOne(cell, run, run_binary);
    }
  }
  std::cerr << "error: --run_key " << key << ": no run of this grid has that key (was the grid file "
            << "changed after the jobs were submitted? `--dry_run` lists the keys)\n";
  return 2;
}

// Read back from the run directories, not taken from the launcher: a run
// whose metrics.json is missing or does not parse is not finished. 1 (naming
// each) when some are not, else 0.
int CheckAllFinished(const ExpandedGrid& grid) {
  std::string unfinished;
  int num_unfinished = 0;
  for (const GridCell& cell : grid.cells) {
    for (const GridRun& run : cell.runs) {
      const RunState state = ReadRunState(run.run_dir);
      if (state == RunState::kFinished) continue;
      ++num_unfinished;
      absl::StrAppend(&unfinished, "  ", cell.label, " seed ", run.seed, ": ", RunStateName(state), " (",
                      run.run_dir, ")\n");
    }
  }
  if (num_unfinished == 0) return 0;
  std::cerr << "error: " << num_unfinished << " run(s) did not finish; their errors are in the notes "
            << "column and in <run_dir>/failed.txt (--retry_failed reruns them):\n"
            << unfinished;
  return 1;
}

// Trains (or submits) the plan under the grid's lock, then reports.
int Train(const ExpandedGrid& grid, const GridPlan& plan, const GridFlags& flags, const std::string& run_binary,
          FileSystem* fs) {
  // Two invocations must never train the same run twice.
  if (absl::Status created = fs->CreateDirs(grid.output_dir); !created.ok()) {
    std::cerr << "error: cannot create the grid's output directory: " << created.message() << "\n";
    return 2;
  }
  absl::StatusOr<DirLock> lock = DirLock::Acquire(grid.output_dir, ".grid.lock");
  if (!lock.ok()) {
    std::cerr << "error: another grid is training in '" << grid.output_dir << "' (" << lock.status().message()
              << "); wait for it or choose another --output_dir\n";
    return 2;
  }
  // A queued submission of this grid (any launcher's) would train the same runs.
  if (absl::Status queued = CheckNoLauncherJobsInFlight(grid.output_dir); !queued.ok()) {
    std::cerr << "error: " << queued.message() << "\n";
    return 2;
  }
  LauncherContext context;
  context.progress = &std::cerr;
  context.interactive = isatty(STDERR_FILENO) == 1;
  LaunchRequest request;
  request.grid = &grid;
  request.plan = &plan;
  request.grid_path = flags.grid_path;
  request.run_binary = run_binary;
  absl::StatusOr<LaunchOutcome> outcome = flags.launcher(context)->Launch(request);
  if (!outcome.ok()) {
    std::cerr << "error: " << outcome.status().message() << "\n";
    return 2;
  }
  // Submitted: the scheduler's report job writes results.* when the runs end.
  if (outcome->state == LaunchOutcome::State::kSubmitted) return 0;
  const int status = Report(grid, fs);
  if (outcome->state == LaunchOutcome::State::kInterrupted) return 1;
  return CheckAllFinished(grid) != 0 ? 1 : status;
}

}  // namespace

std::string GridUsage() {
  const std::string indent(11, ' ');
  return absl::StrCat("usage: bazel run //experiments:run -- GRID.pbtxt [--output_dir DIR]\n", indent,
                      "[--report_only] [--dry_run] [--retry_failed] [--run_key KEY]\n", LauncherUsage(indent),
                      "  GRID.pbtxt  grid spec (framework/schema/grid.proto, docs/grids.md)\n");
}

int GridMain(const GridFlags& flags, const std::string& run_binary, FileSystem* fs) {
  auto grid = LoadGrid(flags);
  if (!grid.ok()) {
    std::cerr << "error: " << grid.status().message() << "\n";
    return 2;
  }
  std::cerr << "grid " << grid->name << ": " << grid->cells.size() << " cells x "
            << std::max(1, grid->spec.seeds_size()) << " seed(s); run directories under " << grid->output_dir
            << "/runs\n";
  if (!flags.run_key.empty()) return RunOneKey(*grid, flags.run_key, run_binary);
  const std::string invalid = InvalidCellsReport(*grid);
  if (!invalid.empty()) std::cerr << invalid;
  if (flags.report_only) return Report(*grid, fs);
  const bool stop = !invalid.empty() && grid->spec.invalid_cells() == GridSpec::STOP;
  if (stop) {
    std::cerr << "Nothing was trained. Fix these cells in the grid, or set `invalid_cells: SKIP` to "
                 "train the valid ones and list the invalid ones in the results.\n";
    if (!flags.dry_run) return 2;
  } else if (!invalid.empty()) {
    std::cerr << "invalid_cells: SKIP: training the valid cells only.\n";
  }
  GridPlan plan = PlanGrid(*grid, flags.retry_failed);
  std::cerr << DescribePlan(plan) << "\n";
  if (flags.dry_run) {
    for (const PlannedRun& p : plan.to_run)
      std::cout << (p.resume ? "resume " : "run    ") << p.run->key << "  " << p.cell->label << " seed "
                << p.run->seed << "\n";
    return stop ? 2 : 0;
  }
  return Train(*grid, plan, flags, run_binary, fs);
}

}  // namespace tvlab
