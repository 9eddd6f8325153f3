#include "experiments/grid/grid_main.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "experiments/cli/command_line.h"
#include "experiments/grid/baseline_comparison.h"
#include "experiments/grid/grid_plan.h"
#include "experiments/grid/grid_runner.h"
#include "experiments/grid/results_table.h"
#include "experiments/spec/grid_loader.h"
#include "framework/io/dir_lock.h"
#include "framework/report/run_dir.h"

namespace tvlab {

const char kGridUsage[] =
    "usage: bazel run //experiments:run -- GRID.pbtxt [--jobs N] [--output_dir DIR]\n"
    "                                        [--report_only] [--dry_run] [--retry_failed]\n"
    "  GRID.pbtxt       grid spec (framework/schema/grid.proto, docs/grids.md)\n";

namespace {

std::string WorkingDir() {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (cwd != nullptr) return cwd;
  std::error_code error;  // a deleted working directory: relative paths stay relative
  const std::filesystem::path here = std::filesystem::current_path(error);
  return error ? "." : here.string();
}

// Absolute and normalised; the path as given if the working directory is gone.
std::string AbsolutePath(const std::string& path) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

int Report(const ExpandedGrid& grid, FileSystem* fs) {
  const GridResults results = CollectResults(grid);
  for (const std::string& warning : FewSeedsWarnings(results)) std::cerr << warning << "\n";
  auto written = WriteReport(results, fs);
  if (!written.ok()) {
    std::cerr << "error: " << written.status().message() << "\n";
    return 1;
  }
  std::ifstream md(grid.results_dir + "/results.md");
  std::stringstream text;
  text << md.rdbuf();
  std::cout << text.str() << "\nwritten: ";
  for (const std::string& f : *written) std::cout << f << " ";
  std::cout << "\n";
  return 0;
}

}  // namespace

bool IsGridCommand(const std::vector<std::string>& positional) {
  for (const std::string& a : positional) {
    // Only a regular file small enough to be a spec (not /dev/zero, which
    // never ends).
    std::error_code ec;
    if (!std::filesystem::is_regular_file(tvlab::UserPath(a), ec) ||
        std::filesystem::file_size(tvlab::UserPath(a), ec) > (64 << 20))
      continue;
    std::ifstream in(tvlab::UserPath(a));
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    if (LooksLikeGridSpec(text.str())) return true;
  }
  return false;
}

int GridMain(const GridFlags& flags, const std::string& run_binary, FileSystem* fs) {
  // Absolute, so every path derived from it (output and run directories)
  // means the same to the run processes.
  const std::string grid_path = AbsolutePath(tvlab::UserPath(flags.grid_path));
  auto spec = ParseGridFile(grid_path);
  if (!spec.ok()) {
    std::cerr << "error: " << spec.status().message() << "\n";
    return 2;
  }
  if (!flags.output_dir.empty()) spec->set_output_dir(AbsolutePath(tvlab::UserPath(flags.output_dir)));
  absl::Status metric_ok = ValidateMainMetric(spec->main_metric());
  if (!metric_ok.ok()) {
    std::cerr << "error: " << grid_path << ": " << metric_ok.message() << "\n";
    return 2;
  }
  if (spec->has_scaling()) {
    absl::Status scaling_metric = ValidateMainMetric(spec->scaling().metric());
    if (!scaling_metric.ok()) {
      std::cerr << "error: " << grid_path << ": scaling." << scaling_metric.message() << "\n";
      return 2;
    }
  }
  auto grid = ExpandGrid(*spec, grid_path, WorkingDir());
  if (!grid.ok()) {
    std::cerr << "error: " << grid.status().message() << "\n";
    return 2;
  }
  std::cerr << "grid " << grid->name << ": " << grid->cells.size() << " cells x "
            << std::max(1, grid->spec.seeds_size()) << " seed(s); run directories under " << grid->output_dir
            << "/runs\n";

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
  // Two invocations must never train the same run twice.
  if (absl::Status created = fs->CreateDirs(grid->output_dir); !created.ok()) {
    std::cerr << "error: cannot create the grid's output directory: " << created.message() << "\n";
    return 2;
  }
  absl::StatusOr<DirLock> lock = DirLock::Acquire(grid->output_dir, ".grid.lock");
  if (!lock.ok()) {
    std::cerr << "error: another grid is training in '" << grid->output_dir << "' ("
              << lock.status().message() << "); wait for it or choose another --output_dir\n";
    return 2;
  }
  GridRunnerOptions options;
  options.run_binary = run_binary;
  options.jobs = flags.jobs;
  options.progress = &std::cerr;
  options.interactive = isatty(STDERR_FILENO) == 1;
  GridRunSummary summary = RunGrid(plan, options);
  int status = Report(*grid, fs);
  if (summary.interrupted) return 1;
  // Read back from the run directories, not taken from the runner: a run
  // whose metrics.json is missing or does not parse is not finished.
  std::string unfinished;
  int num_unfinished = 0;
  for (const GridCell& cell : grid->cells) {
    for (const GridRun& run : cell.runs) {
      const RunState state = ReadRunState(run.run_dir);
      if (state == RunState::kFinished) continue;
      ++num_unfinished;
      absl::StrAppend(&unfinished, "  ", cell.label, " seed ", run.seed, ": ", RunStateName(state), " (",
                      run.run_dir, ")\n");
    }
  }
  if (num_unfinished > 0) {
    std::cerr << "error: " << num_unfinished << " run(s) did not finish; their errors are in the notes "
              << "column and in <run_dir>/failed.txt (--retry_failed reruns them):\n"
              << unfinished;
    return 1;
  }
  return status;
}

}  // namespace tvlab
