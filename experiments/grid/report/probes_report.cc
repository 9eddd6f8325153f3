#include "experiments/grid/report/probes_report.h"

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/report/results_format.h"
#include "framework/report/stats.h"

namespace tvlab {
namespace {

// Finished, diverged or not: metrics.json exists and may hold probes.
bool HasProbes(const RunOutcome& r) { return r.state == RunState::kFinished && r.metrics.probes_size() > 0; }

// A finished run with results (not diverged): what the table's means use.
bool WithResults(const RunOutcome& r) { return r.state == RunState::kFinished && !r.diverged(); }

bool Selected(const std::string& name, const GridSpec& spec) {
  for (const std::string& prefix : spec.report_probes())
    if (absl::StartsWith(name, prefix)) return true;
  return false;
}

// One selected probe of one cell: its first and largest value per seed.
struct CellProbe {
  std::string name;
  std::vector<double> first, max;
};

// The selected probes of a cell's seeds with results, in the order the
// first seed that has each recorded them.
std::vector<CellProbe> CellProbes(const CellOutcome& cell, const GridSpec& spec) {
  std::vector<CellProbe> out;
  for (const RunOutcome& r : cell.runs) {
    if (!WithResults(r)) continue;
    for (const RunMetrics::Probe& p : r.metrics.probes()) {
      if (!Selected(p.name(), spec) || !p.has_first() || !p.has_max()) continue;
      auto it = std::find_if(out.begin(), out.end(), [&](const CellProbe& c) { return c.name == p.name(); });
      if (it == out.end()) it = out.insert(out.end(), CellProbe{p.name(), {}, {}});
      it->first.push_back(p.first());
      it->max.push_back(p.max());
    }
  }
  return out;
}

// The distinct probe families ("grad_norm/", "logits/") the finished runs
// recorded, in order, and the report_probes entries none of their probes match.
void Recorded(const GridResults& results, std::vector<std::string>* families,
              std::vector<std::string>* unmatched) {
  const auto& entries = results.grid->spec.report_probes();
  std::vector<bool> matched(entries.size(), false);
  for (const CellOutcome& cell : results.cells) {
    for (const RunOutcome& r : cell.runs) {
      if (!HasProbes(r)) continue;
      for (const RunMetrics::Probe& p : r.metrics.probes()) {
        const std::string family = p.name().substr(0, p.name().find('/') + 1);
        if (std::find(families->begin(), families->end(), family) == families->end()) families->push_back(family);
        for (int i = 0; i < entries.size(); ++i) matched[i] = matched[i] || absl::StartsWith(p.name(), entries[i]);
      }
    }
  }
  for (int i = 0; i < entries.size(); ++i)
    if (!matched[i]) unmatched->push_back(entries[i]);
}

std::string Quoted(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const std::string& n : names) quoted.push_back(absl::StrCat("`", n, "`"));
  return absl::StrJoin(quoted, ", ");
}

// The table: axis values, probe, seeds, mean first, mean max.
std::string ProbeTable(const GridResults& results) {
  const ExpandedGrid& grid = *results.grid;
  std::vector<std::string> header = grid.axis_labels;
  header.insert(header.end(), {"probe", "seeds", "first", "max"});
  std::string out = absl::StrCat("| ", absl::StrJoin(header, " | "), " |\n|");
  for (size_t i = 0; i < header.size(); ++i) absl::StrAppend(&out, i <= grid.axis_labels.size() ? "---|" : "---:|");
  absl::StrAppend(&out, "\n");
  int rows = 0;
  for (const CellOutcome& cell : results.cells) {
    for (const CellProbe& p : CellProbes(cell, grid.spec)) {
      std::vector<std::string> row;
      for (const std::string& v : cell.cell->axis_values) row.push_back(MdCell(v));
      row.push_back(MdCell(p.name));
      row.push_back(absl::StrCat(p.first.size()));
      row.push_back(absl::StrFormat("%.4g", Summarize(p.first).mean));
      row.push_back(absl::StrFormat("%.4g", Summarize(p.max).mean));
      absl::StrAppend(&out, "| ", absl::StrJoin(row, " | "), " |\n");
      ++rows;
    }
  }
  return rows > 0 ? out : "";
}

}  // namespace

bool AnyProbes(const GridResults& results) {
  for (const CellOutcome& cell : results.cells)
    for (const RunOutcome& r : cell.runs)
      if (HasProbes(r)) return true;
  return false;
}

std::string ProbesCsv(const GridResults& results) {
  std::string out = "cell,seed,state,probe,first,last,max,mean,first_step,last_step,count\n";
  for (const CellOutcome& cell : results.cells) {
    for (const RunOutcome& r : cell.runs) {
      if (!HasProbes(r)) continue;
      for (const RunMetrics::Probe& p : r.metrics.probes()) {
        auto value = [](bool has, double v) { return has ? FormatRoundTrip(v) : std::string(); };
        auto step = [](bool has, int32_t v) { return has ? absl::StrCat(v) : std::string(); };
        const std::vector<std::string> row = {
            CsvField(cell.cell->label), absl::StrCat(r.run->seed), r.diverged() ? "diverged" : "finished",
            CsvField(p.name()), value(p.has_first(), p.first()), value(p.has_last(), p.last()),
            value(p.has_max(), p.max()), value(p.has_mean(), p.mean()), step(p.has_first_step(), p.first_step()),
            step(p.has_last_step(), p.last_step()), step(p.has_count(), p.count())};
        absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
      }
    }
  }
  return out;
}

std::string ProbesMarkdown(const GridResults& results) {
  const GridSpec& spec = results.grid->spec;
  const bool any = AnyProbes(results);
  if (!any && spec.report_probes().empty()) return "";
  std::string out = "\n## Probes (exploratory)\n\n";
  if (!any) {
    return out + absl::StrCat("No finished run has recorded training probes yet (`report_probes`: ",
                              Quoted({spec.report_probes().begin(), spec.report_probes().end()}), ").\n");
  }
  std::vector<std::string> families, unmatched;
  Recorded(results, &families, &unmatched);
  absl::StrAppend(&out, "Training probes (`train.probe_every`, docs/spec.md) were recorded: ", Quoted(families),
                  ". Every probe of every finished run (diverged ones marked), with its last value, mean and "
                  "steps: probes.csv. Not declared hypotheses: exploratory.\n\n");
  if (spec.report_probes().empty()) {
    return out + "`report_probes` in the grid spec (e.g. `[\"grad_norm/\"]`) tabulates chosen probes here.\n";
  }
  const std::string table = ProbeTable(results);
  if (!table.empty()) {
    absl::StrAppend(&out, "Probes starting with ",
                    Quoted({spec.report_probes().begin(), spec.report_probes().end()}),
                    " (`report_probes`), per cell: **first** = value at the first probed step (step 0: "
                    "the initialisation), **max** = largest over the probed steps, each the mean over the "
                    "cell's seeds with results (n in `seeds`).\n\n", table);
  }
  std::vector<std::string> notes;
  if (table.empty() && unmatched.size() < static_cast<size_t>(spec.report_probes().size()))
    notes.push_back("No seed with results recorded the selected probes (diverged seeds' are in probes.csv).");
  for (const std::string& entry : unmatched) {
    notes.push_back(absl::StrCat("`report_probes` entry `", entry, "` matches no probe of any finished run (recorded: ",
                                 Quoted(families), ")."));
  }
  for (const std::string& note : notes) absl::StrAppend(&out, absl::EndsWith(out, "\n\n") ? "" : "\n", note, "\n");
  return out;
}

}  // namespace tvlab
