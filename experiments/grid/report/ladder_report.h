#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_LADDER_REPORT_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_LADDER_REPORT_H_

// The report of a grid with a size ladder (grid.proto's Ladder), from the
// run directories alone:
//   ladder.csv       one row per variant and rung: sizes, cost, the final
//                    eval_loss and the FLOPs to reach target_loss, each a
//                    mean with its t interval over seeds
//   ladder_runs.csv  one row per run: tokens, FLOPs, where its evaluation
//                    curve reached the target (or that it did not)
//   ladder.md        the table, the fits of final eval_loss against training
//                    FLOPs and against parameters per variant, and where the
//                    compared variants' fitted curves cross
//   ladder.svg       eval_loss against training FLOPs: every run's
//                    evaluation curve, the fitted curves and the target
// A run's training FLOPs are the cost model's train_flops_per_token
// (framework/report/cost_model.h) x the tokens it trained
// (RunMetrics.tokens_trained); an evaluation after step s (0-based) counts
// (s + 1) / steps of them.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/grid/report/grid_results.h"
#include "experiments/grid/report/ladder_analysis.h"
#include "framework/report/scaling_fit.h"

namespace tvlab {

struct LadderRun {
  uint64_t seed = 0;
  std::string state;  // "finished", "diverged", "failed", "not run"
  std::string run_dir, error;
  bool measured = false;  // finished, not diverged, with a cost: the numbers below are set
  double tokens_trained = 0, train_flops = 0;
  bool has_final_loss = false;
  double final_loss = 0;                      // metrics.json's eval_loss
  std::vector<double> eval_flops, eval_loss;  // the evaluation curve (train_log.csv)
  TargetCrossing target;
};

struct LadderRungResult {
  std::string rung;  // the value in the ladder's column ("4", "L2-d64")
  int64_t d_model = 0, num_layers = 0, num_heads = 0, d_ff = 0;
  bool has_cost = false;
  double parameters = 0, flops_per_token = 0;
  std::vector<LadderRun> runs;  // one per seed
  int finished = 0;             // measured runs
  int reached = 0, at_or_before = 0;
  MeanInterval final_loss, train_flops;
  // Only when every measured seed reached the target (a mean over the seeds
  // that did would favour the lucky ones): then defined or n == 1.
  bool target_complete = false;
  MeanInterval target_flops;
  std::string note;  // why numbers are missing: an invalid cell, no cost, ...
};

struct LadderVariant {
  std::string label;                     // "ffn=swiglu", an ablation row, "base"
  std::vector<LadderRungResult> rungs;   // in rung order
  std::vector<double> compute, parameters, loss;  // one point per measured seed with a final loss
  absl::StatusOr<PowerLawFit> fit_compute = absl::UnknownError("not fitted");
  absl::StatusOr<PowerLawFit> fit_parameters = absl::UnknownError("not fitted");
};

// Empty without spec.ladder.
std::vector<LadderVariant> LadderVariants(const GridResults& results);

// The pairs whose crossings are reported: ladder.compare's two variants, or
// every pair.
std::vector<std::pair<int, int>> LadderPairs(const GridSpec& spec, const std::vector<LadderVariant>& variants);

std::string LadderCsv(const GridResults& results, const std::vector<LadderVariant>& variants);
std::string LadderRunsCsv(const GridResults& results, const std::vector<LadderVariant>& variants);
std::string LadderMarkdown(const GridResults& results, const std::vector<LadderVariant>& variants);
std::string LadderSvg(const GridResults& results, const std::vector<LadderVariant>& variants);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_LADDER_REPORT_H_
