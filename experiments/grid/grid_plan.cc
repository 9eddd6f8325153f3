#include "experiments/grid/grid_plan.h"

#include "absl/strings/str_cat.h"
#include "framework/report/run_dir.h"
#include "framework/train/checkpoint.h"

namespace tvlab {

GridPlan PlanGrid(const ExpandedGrid& grid, bool retry_failed) {
  GridPlan plan;
  for (const GridCell& cell : grid.cells) {
    for (const GridRun& run : cell.runs) {
      ++plan.total;
      RunState state = ReadRunState(run.run_dir);
      if (state == RunState::kFinished) {
        ++plan.finished;
        continue;
      }
      if (state == RunState::kFailed && !retry_failed) {
        ++plan.failed_kept;
        continue;
      }
      PlannedRun p;
      p.cell = &cell;
      p.run = &run;
      p.retry = state == RunState::kFailed;
      p.resume = LatestCheckpoint(run.run_dir).ok();
      plan.to_run.push_back(p);
    }
  }
  return plan;
}

std::string DescribePlan(const GridPlan& plan) {
  int resumes = 0;
  for (const PlannedRun& p : plan.to_run) resumes += p.resume;
  std::string out = absl::StrCat(plan.total, " runs: ", plan.finished, " finished (skipped)");
  if (plan.failed_kept > 0) {
    absl::StrAppend(&out, ", ", plan.failed_kept, " failed earlier (kept; --retry_failed reruns ",
                    plan.failed_kept == 1 ? "it" : "them", ")");
  }
  absl::StrAppend(&out, ", ", plan.to_run.size(), " to run");
  if (resumes > 0) absl::StrAppend(&out, " (", resumes, " resume from a checkpoint)");
  return out;
}

}  // namespace tvlab
