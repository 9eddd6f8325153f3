#include "experiments/grid/expand/report_probes.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"

namespace tvlab {

absl::Status CheckReportProbes(const ExpandedGrid& grid) {
  const auto& entries = grid.spec.report_probes();
  if (entries.empty()) return absl::OkStatus();
  std::set<std::string> seen;
  for (int i = 0; i < entries.size(); ++i) {
    const std::string field = absl::StrCat("report_probes[", i, "]");
    if (entries[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " is empty; give a probe name or the start of one, such as \"grad_norm/\" or "
                 "\"attention_max_logit/\" (docs/spec.md, \"Training probes\", lists them)"));
    }
    if (!seen.insert(entries[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " \"", entries[i], "\" is listed twice; list each prefix once"));
    }
  }
  for (const GridCell& cell : grid.cells)
    for (const GridRun& run : cell.runs)
      if (run.spec.train().probe_every() > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "report_probes: no cell records probes (train.probe_every is 0 in every valid cell); set it, e.g. "
      "set: \"train.probe_every=50\", or drop report_probes");
}

}  // namespace tvlab
