#include "experiments/grid/report/results_table.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "experiments/grid/report/baseline_comparison.h"
#include "experiments/grid/report/hypothesis_report.h"
#include "experiments/grid/report/ladder_report.h"
#include "experiments/grid/report/lr_sweep_report.h"
#include "experiments/grid/report/probes_report.h"
#include "experiments/grid/report/scaling_report.h"
#include "framework/io/atomic_file.h"

namespace tvlab {

absl::StatusOr<std::vector<std::string>> WriteReport(const GridResults& results, FileSystem* fs) {
  const std::string dir = results.grid->results_dir;
  if (absl::Status created = fs->CreateDirs(dir); !created.ok()) {
    return absl::Status(created.code(), absl::StrCat("cannot create the results directory: ", created.message()));
  }
  std::vector<std::pair<std::string, std::string>> files = {
      {"results.csv", ResultsCsv(results)},
      {"results.md", ResultsMarkdown(results)},
      {"significance.csv", SignificanceCsv(results, CompareWithBaseline(results, results.grid->spec.main_metric()))},
      {"loss_curves.svg", LossCurvesSvg(results)},
      {results.grid->spec.main_metric() + ".svg", MainMetricSvg(results)},
  };
  if (!results.grid->hypotheses.empty())
    files.emplace_back("hypotheses.csv", HypothesesCsv(results, TestHypotheses(results)));
  if (results.grid->spec.has_scaling()) files.emplace_back("scaling.svg", ScalingSvg(results, FitScaling(results)));
  if (results.grid->spec.has_lr_sweep()) {
    const std::vector<LrVariant> variants = LrSweepVariants(results);
    files.emplace_back("lr_sweep.md", LrSweepMarkdown(results, variants));
    files.emplace_back("lr_sweep.svg", LrSweepSvg(results, variants));
  }
  if (results.grid->spec.has_ladder()) {
    const std::vector<LadderVariant> variants = LadderVariants(results);
    files.emplace_back("ladder.csv", LadderCsv(results, variants));
    files.emplace_back("ladder_runs.csv", LadderRunsCsv(results, variants));
    files.emplace_back("ladder.md", LadderMarkdown(results, variants));
    files.emplace_back("ladder.svg", LadderSvg(results, variants));
  }
  if (!ContextLengths(results).empty()) files.emplace_back("context_perplexity.svg", ContextPerplexitySvg(results));
  if (AnyProbes(results)) files.emplace_back("probes.csv", ProbesCsv(results));  // else no file: results unchanged
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    const std::string path = dir + "/" + name;
    if (absl::Status s = WriteFileAtomically(fs, path, text); !s.ok()) return s;
    written.push_back(path);
  }
  return written;
}

}  // namespace tvlab
