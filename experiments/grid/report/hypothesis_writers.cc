// hypotheses.csv and the hypotheses section of results.md
// (hypothesis_report.h).

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/report/baseline_comparison.h"
#include "experiments/grid/report/hypothesis_report.h"
#include "experiments/grid/report/results_format.h"
#include "framework/report/stats.h"

namespace tvlab {
namespace {

std::string DirectionName(const Hypothesis& h) {
  switch (h.direction()) {
    case Hypothesis::A_LESS:
      return "A < B";
    case Hypothesis::A_GREATER:
      return "A > B";
    case Hypothesis::EQUIVALENT:
      return absl::StrFormat("A ≈ B (±%g)", h.smallest_effect());
    default:
      return "A != B";
  }
}

std::string Sidedness(const Hypothesis& h) {
  if (h.direction() == Hypothesis::EQUIVALENT) return "TOST";
  return h.one_sided() ? "one-sided" : "two-sided";
}

// The CI's level: (1 - alpha), or (1 - 2 alpha) for TOST.
double CiLevel(const Hypothesis& h) {
  return 1 - (h.direction() == Hypothesis::EQUIVALENT ? 2 : 1) * h.alpha();
}

std::string TestName(const GridHypothesis& h) { return h.paired() ? "paired by seed" : "Welch"; }

std::string SeedsNeededText(const HypothesisOutcome& o) {
  if (!o.defined || !(o.sd > 0)) return "";
  return o.seeds_needed ? absl::StrCat(*o.seeds_needed) : "> 100000";
}

}  // namespace

std::string HypothesesCsv(const GridResults& results, const std::vector<HypothesisOutcome>& outcomes) {
  std::string out =
      "hypothesis,family,metric,cell_a,cell_b,test,direction,sides,smallest_effect,alpha,n_a,n_b,delta,ci_low,"
      "ci_high,effect_size,sd,df,t,p,family_size,p_holm,rejected,verdict,power_at_smallest_effect,"
      "minimum_detectable_effect,seeds_needed,note\n";
  for (const HypothesisOutcome& o : outcomes) {
    const GridHypothesis& h = *o.hypothesis;
    std::vector<std::string> row = {h.spec.name(), h.family, h.metric, results.cells[h.cell_a].cell->label,
                                    results.cells[h.cell_b].cell->label, TestName(h), DirectionName(h.spec),
                                    Sidedness(h.spec), FormatExact(h.spec.smallest_effect()),
                                    FormatExact(h.spec.alpha()), absl::StrCat(o.n_a), absl::StrCat(o.n_b),
                                    FormatExact(o.delta)};
    if (o.defined) {
      row.insert(row.end(), {FormatExact(o.ci_low), FormatExact(o.ci_high), FormatExact(o.effect_size),
                             FormatExact(o.sd), FormatExact(o.df), FormatExact(o.t), FormatExact(o.p)});
    } else {
      row.insert(row.end(), {"", "", "", "", "", "", ""});
    }
    row.insert(row.end(), {absl::StrCat(o.family_size), FormatExact(o.holm_p), o.rejected ? "true" : "false",
                           o.verdict});
    if (o.sd > 0 && o.defined) {
      row.insert(row.end(), {FormatExact(o.power_at_smallest), FormatExact(o.minimum_detectable)});
    } else {
      row.insert(row.end(), {"", ""});
    }
    row.push_back(SeedsNeededText(o));
    row.push_back(o.why_undefined);
    for (std::string& field : row) field = CsvField(OneLine(field));
    absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
  }
  return out;
}

std::string HypothesesMarkdown(const GridResults& results, const std::vector<HypothesisOutcome>& outcomes) {
  if (outcomes.empty()) return "";
  std::string out =
      "## Pre-registered hypotheses\n\n"
      "Declared in the grid spec before the runs (`hypothesis`) and tested exactly as declared: Δ = mean(A) − "
      "mean(B), its two-sided (1 − α) CI, the p-value of the declared test and sidedness, **p (Holm)** within "
      "the declared family at its α. An equivalence hypothesis (|A − B| < its margin, the smallest effect) is "
      "tested by TOST (two one-sided tests at α; p the larger), its CI the (1 − 2α) interval TOST checks against "
      "the margin, its power that of showing equivalence when the true Δ is 0, its MDE the smallest margin shown "
      "with 80% power. Effect size: Cohen's d (pooled std) for Welch, d_z (std of the per-seed "
      "differences) when paired. **Power** at the declared smallest effect with the seeds run, the **minimum "
      "detectable effect** at those seeds and the **seeds** per cell needed, all for 80% power at α / m (m = the "
      "family's size, Holm's first step: a lower bound on Holm's power), from this grid's own seed std "
      "(noncentral t, framework/report/power.h). Per-hypothesis numbers: hypotheses.csv. Everything after this "
      "section is **exploratory**.\n\n"
      "| hypothesis | family | A | B | metric | test | expected | n | Δ | CI | effect size | p | p (Holm) | "
      "verdict | smallest effect | power | MDE | seeds for 80% |\n"
      "|---|---|---|---|---|---|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|\n";
  for (const HypothesisOutcome& o : outcomes) {
    const GridHypothesis& h = *o.hypothesis;
    std::vector<std::string> cells = {
        MdCell(h.spec.name()), MdCell(h.family), MdCell(results.cells[h.cell_a].cell->label),
        MdCell(results.cells[h.cell_b].cell->label), MdCell(h.metric), TestName(h),
        absl::StrCat(DirectionName(h.spec), ", ", Sidedness(h.spec)), absl::StrCat(o.n_a, " / ", o.n_b),
        FormatDelta(o.delta, 4)};
    if (o.defined) {
      cells.insert(cells.end(), {absl::StrFormat("%s (%g%%)", FormatInterval(o.ci_low, o.ci_high, 4),
                                                 100 * CiLevel(h.spec)),
                                 absl::StrFormat("%.2f", o.effect_size), FormatP(o.p), FormatP(o.holm_p)});
    } else {
      cells.insert(cells.end(), {"", "", "", ""});
    }
    cells.push_back(o.defined ? o.verdict : absl::StrCat("untested: ", MdCell(o.why_undefined)));
    cells.push_back(absl::StrFormat("%g", h.spec.smallest_effect()));
    if (o.defined && o.sd > 0) {
      cells.insert(cells.end(), {absl::StrFormat("%.2f", o.power_at_smallest),
                                 absl::StrFormat("%.4f", o.minimum_detectable), SeedsNeededText(o)});
    } else {
      cells.insert(cells.end(), {"", "", ""});
    }
    absl::StrAppend(&out, "| ", absl::StrJoin(cells, " | "), " |\n");
  }
  return out + "\n## All cells (exploratory)\n\n";
}

}  // namespace tvlab
