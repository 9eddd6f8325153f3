#include "experiments/grid/report/baseline_comparison.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/report/results_format.h"
#include "framework/report/stats.h"

namespace tvlab {

bool GridComparison::any_bootstrap() const {
  for (const auto& c : cells)
    if (c && c->bootstrap) return true;
  return false;
}

GridComparison CompareWithBaseline(const GridResults& results, const std::string& metric, double alpha) {
  GridComparison out;
  out.metric = metric;
  out.alpha = alpha;
  out.cells.resize(results.cells.size());
  const int baseline = results.grid->baseline;
  if (baseline < 0) return out;
  const std::vector<double> base = results.cells[baseline].Values(metric);
  if (base.empty()) return out;
  std::vector<double> family;
  std::vector<size_t> family_cells;
  for (size_t c = 0; c < results.cells.size(); ++c) {
    if (static_cast<int>(c) == baseline || !results.cells[c].cell->valid()) continue;
    const std::vector<double> values = results.cells[c].Values(metric);
    if (values.empty()) continue;
    BaselineComparison cmp;
    cmp.welch = WelchTest(values, base, alpha);
    if (static_cast<int>(values.size()) >= kMinSeedsForBootstrap &&
        static_cast<int>(base.size()) >= kMinSeedsForBootstrap) {
      cmp.bootstrap = BootstrapDeltaCi(values, base, kBootstrapResamples, kBootstrapSeed, alpha);
    }
    cmp.few_seeds = static_cast<int>(values.size()) < kMinSeedsForSignificance ||
                    static_cast<int>(base.size()) < kMinSeedsForSignificance;
    if (cmp.welch.defined) {
      family.push_back(cmp.welch.p);
      family_cells.push_back(c);
    }
    out.cells[c] = cmp;
  }
  const std::vector<double> adjusted = HolmAdjust(family);
  for (size_t i = 0; i < family_cells.size(); ++i) {
    BaselineComparison& cmp = *out.cells[family_cells[i]];
    cmp.holm_p = adjusted[i];
    cmp.significant = adjusted[i] < alpha;
  }
  out.family_size = static_cast<int>(family.size());
  return out;
}

std::vector<std::string> FewSeedsWarnings(const GridResults& results) {
  std::vector<std::string> out;
  for (const CellOutcome& cell : results.cells) {
    const int n = cell.finished();
    if (cell.cell->valid() && n > 0 && n < kMinSeedsForSignificance) {
      out.push_back(absl::StrCat("warning: cell '", cell.cell->label, "' has ", n, " finished seed",
                                 n == 1 ? "" : "s", " (fewer than ", kMinSeedsForSignificance,
                                 "): its Δ interval and p-value are not to be trusted; list more `seeds`"));
    }
  }
  return out;
}

std::string SignificanceCsv(const GridResults& results, const GridComparison& comparison) {
  std::string out =
      "cell,metric,n,n_baseline,delta,ci_low,ci_high,df,t,p,p_holm,significant,bootstrap_low,"
      "bootstrap_high,note\n";
  for (size_t c = 0; c < comparison.cells.size(); ++c) {
    if (!comparison.cells[c]) continue;
    const BaselineComparison& cmp = *comparison.cells[c];
    const WelchResult& w = cmp.welch;
    std::vector<std::string> row = {results.cells[c].cell->label, comparison.metric, absl::StrCat(w.n_a),
                                    absl::StrCat(w.n_b), FormatExact(w.delta)};
    if (w.defined) {
      row.insert(row.end(), {FormatExact(w.ci_low), FormatExact(w.ci_high), FormatExact(w.df), FormatExact(w.t), FormatExact(w.p), FormatExact(*cmp.holm_p),
                             cmp.significant ? "true" : "false"});
    } else {
      row.insert(row.end(), {"", "", "", "", "", "", "false"});
    }
    if (cmp.bootstrap) {
      row.insert(row.end(), {FormatExact(cmp.bootstrap->low), FormatExact(cmp.bootstrap->high)});
    } else {
      row.insert(row.end(), {"", ""});
    }
    std::string note = w.defined ? "" : w.why_undefined;
    if (cmp.few_seeds) note = absl::StrCat(note, note.empty() ? "" : "; ", "fewer than 3 seeds");
    row.push_back(note);
    for (std::string& field : row) field = CsvField(field);
    absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
  }
  return out;
}

std::string FormatInterval(double low, double high, int digits) {
  return absl::StrCat("[", FormatDelta(low, digits), ", ", FormatDelta(high, digits), "]");
}

std::string FormatP(double p) {
  if (p >= 0.001) return absl::StrFormat("%.3f", p);
  return absl::StrFormat("%.1e", p);
}

}  // namespace tvlab
