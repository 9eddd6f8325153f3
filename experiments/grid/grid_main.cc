#include "experiments/grid/grid_main.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "experiments/grid/expand/grid_loader.h"
#include "experiments/grid/grid_plan.h"
#include "experiments/grid/grid_runner.h"
#include "experiments/grid/report/baseline_comparison.h"
#include "experiments/grid/report/results_table.h"
#include "experiments/grid/report/seeds_for_power.h"
#include "framework/io/dir_lock.h"
#include "framework/report/run_dir.h"
#include "framework/train/checkpoint.h"

namespace tvlab {
namespace {

// seeds_for_power: checks it and lists the pilot's seeds 0 .. pilot_seeds-1.
absl::Status ListPilotSeeds(const std::string& path, GridSpec* spec) {
  const SeedsForPower& options = spec->seeds_for_power();
  auto fail = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": seeds_for_power: ", what));
  };
  if (!spec->seeds().empty())
    return fail("leave `seeds` empty: the pilot runs seeds 0 .. pilot_seeds-1 and its variance sets the rest");
  if (spec->hypothesis().empty()) return fail("needs at least one `hypothesis` to plan the seeds for");
  if (options.pilot_seeds() < 2) return fail(absl::StrCat("pilot_seeds must be >= 2 (got ", options.pilot_seeds(), ")"));
  if (!(options.power() > 0 && options.power() < 1))
    return fail(absl::StrCat("power must be in (0, 1), e.g. 0.8 (got ", options.power(), ")"));
  if (options.max_seeds() != 0 && options.max_seeds() <= options.pilot_seeds())
    return fail(absl::StrCat("max_seeds ", options.max_seeds(), " must exceed pilot_seeds ", options.pilot_seeds(),
                             " (or be 0: as many as max_runs allows)"));
  for (int seed = 0; seed < options.pilot_seeds(); ++seed) spec->add_seeds(seed);
  return absl::OkStatus();
}

bool AllRunsFinished(const ExpandedGrid& grid) {
  for (const GridCell& cell : grid.cells)
    for (const GridRun& run : cell.runs)
      if (ReadRunState(run.run_dir) != RunState::kFinished) return false;
  return true;
}

// seeds_for_power: once the pilot has finished, the grid with the seeds its
// variance asks for (and the reasons on stderr); before that, the pilot.
absl::StatusOr<ExpandedGrid> ExtendForPower(ExpandedGrid pilot, const GridFlags& flags, bool* pilot_pending) {
  *pilot_pending = !AllRunsFinished(pilot);
  if (*pilot_pending) {
    std::cerr << "seeds_for_power: running the pilot (" << pilot.spec.seeds_size()
              << " seeds per cell) first; the rest follow from its variance\n";
    return pilot;
  }
  const SeedsForPower& options = pilot.spec.seeds_for_power();
  auto plan = PlanSeedsForPower(CollectResults(pilot), options, pilot.spec.max_runs());
  if (!plan.ok()) return absl::Status(plan.status().code(), absl::StrCat(flags.grid_path, ": ", plan.status().message()));
  for (const std::string& line : plan->lines) std::cerr << "seeds_for_power: " << line << "\n";
  const bool every_cell = options.cells() == SeedsForPower::EVERY_CELL;
  std::cerr << "seeds_for_power: " << plan->seeds_per_cell << " seeds per cell"
            << (every_cell ? std::string()
                           : absl::StrCat(" in the ", plan->grown_cells.size(), " cells the hypotheses name; ",
                                          options.pilot_seeds(), " (the pilot's) in the others"))
            << "\n";
  GridSpec spec = pilot.spec;
  spec.clear_seeds();
  for (int seed = 0; seed < plan->seeds_per_cell; ++seed) spec.add_seeds(seed);
  if (every_cell) return ExpandGrid(spec, flags.grid_path, flags.working_dir);
  // Expanded at the planned seeds everywhere (the plan has checked the runs
  // it keeps against max_runs), then the other cells cut back to the pilot.
  spec.set_max_runs(std::max<int64_t>(spec.max_runs(), int64_t{plan->seeds_per_cell} * pilot.cells.size()));
  auto grid = ExpandGrid(spec, flags.grid_path, flags.working_dir);
  if (!grid.ok()) return grid;
  grid->spec.set_max_runs(pilot.spec.max_runs());
  const std::set<int> grown(plan->grown_cells.begin(), plan->grown_cells.end());
  for (int i = 0; i < static_cast<int>(grid->cells.size()); ++i) {
    std::vector<GridRun>& runs = grid->cells[i].runs;
    if (grown.count(i)) continue;
    runs.erase(std::remove_if(runs.begin(), runs.end(),
                              [&](const GridRun& run) { return run.seed >= uint64_t(options.pilot_seeds()); }),
               runs.end());
  }
  return grid;
}

// The grid file, with --output_dir applied, its metrics checked, expanded
// into validated cells (with seeds_for_power: the pilot's seeds until it has
// finished, then the seeds it asks for). The error is the whole message.
absl::StatusOr<ExpandedGrid> LoadGrid(const GridFlags& flags, bool* pilot_pending) {
  *pilot_pending = false;
  auto spec = ParseGridFile(flags.grid_path);
  if (!spec.ok()) return spec.status();
  if (spec->has_seeds_for_power()) {
    if (absl::Status listed = ListPilotSeeds(flags.grid_path, &*spec); !listed.ok()) return listed;
  }
  if (!flags.output_dir.empty()) spec->set_output_dir(flags.output_dir);
  absl::Status metric_ok = ValidateMainMetric(spec->main_metric());
  if (!metric_ok.ok())
    return absl::InvalidArgumentError(absl::StrCat(flags.grid_path, ": ", metric_ok.message()));
  if (spec->has_scaling()) {
    absl::Status scaling_metric = ValidateMainMetric(spec->scaling().metric());
    if (!scaling_metric.ok())
      return absl::InvalidArgumentError(absl::StrCat(flags.grid_path, ": scaling.", scaling_metric.message()));
  }
  auto grid = ExpandGrid(*spec, flags.grid_path, flags.working_dir);
  if (!grid.ok() || !spec->has_seeds_for_power()) return grid;
  return ExtendForPower(*std::move(grid), flags, pilot_pending);
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
  // With a ladder the FLOPs to the target, the fits and the crossings lead.
  if (grid.spec.has_ladder()) text << std::ifstream(grid.results_dir + "/ladder.md").rdbuf() << "\n";
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
  bool pilot_pending = false;
  auto grid = LoadGrid(flags, &pilot_pending);
  if (!grid.ok()) {
    std::cerr << "error: " << grid.status().message() << "\n";
    return 2;
  }
  size_t runs = 0;
  for (const GridCell& cell : grid->cells) runs += cell.runs.size();
  const size_t seeds = std::max(1, grid->spec.seeds_size());
  std::cerr << "grid " << grid->name << ": " << grid->cells.size() << " cells x " << seeds << " seed(s)"
            << (runs == seeds * (grid->cells.size() - grid->num_invalid())
                    ? std::string()
                    : absl::StrCat(" (", runs, " runs: seeds_for_power's other cells keep the pilot's seeds)"))
            << "; run directories under " << grid->output_dir << "/runs\n";
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
  const int status = Train(*grid, plan, flags, run_binary, fs);
  // seeds_for_power, trained here: the pilot has finished, so run the rest.
  if (status != 0 || !pilot_pending || !AllRunsFinished(*grid)) return status;
  grid = LoadGrid(flags, &pilot_pending);
  if (!grid.ok()) {
    std::cerr << "error: " << grid.status().message() << "\n";
    return 2;
  }
  GridPlan rest = PlanGrid(*grid, flags.retry_failed);
  std::cerr << DescribePlan(rest) << "\n";
  return Train(*grid, rest, flags, run_binary, fs);
}

}  // namespace tvlab
