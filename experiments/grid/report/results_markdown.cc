#include "experiments/grid/report/results_markdown.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/expand/equal_budget.h"
#include "experiments/grid/report/baseline_comparison.h"
#include "experiments/grid/report/hypothesis_report.h"
#include "experiments/grid/report/probes_report.h"
#include "experiments/grid/report/results_format.h"
#include "experiments/grid/report/scaling_report.h"
#include "framework/report/stats.h"

namespace tvlab {
namespace {

// Quality columns of results.md, after the main metric.
const char* const kTableMetrics[] = {"token_accuracy", "sequence_accuracy", "eval_loss"};

// What the table shows, decided once from the results.
struct Table {
  const ExpandedGrid* grid = nullptr;
  std::string main;                  // grid.spec.main_metric
  std::vector<std::string> quality;  // the main metric, then kTableMetrics
  const CellOutcome* base = nullptr;  // the baseline cell, if any
  int diverged_runs = 0;
  GridComparison comparison;  // of the main metric, against the baseline
  bool bootstrap = false;     // some cell has a bootstrap CI
  // Columns after the main metric's Δ: Welch CI, p, Holm p, bootstrap CI.
  size_t significance_columns = 0;
  std::vector<int32_t> contexts;  // a ppl@N column each
  bool decode_speed = false;
  bool budgets = false;  // equal_budget: solved value and budget Δ columns
  bool has_baseline() const { return base != nullptr; }
};

Table TableOf(const GridResults& results) {
  Table t;
  t.grid = results.grid;
  t.main = t.grid->spec.main_metric();
  t.quality = {t.main};
  for (const char* m : kTableMetrics)
    if (m != t.main) t.quality.push_back(m);
  if (t.grid->baseline >= 0) t.base = &results.cells[t.grid->baseline];
  for (const CellOutcome& c : results.cells) t.diverged_runs += c.diverged();
  t.comparison = CompareWithBaseline(results, t.main);
  t.bootstrap = t.comparison.any_bootstrap();
  t.significance_columns = t.has_baseline() ? 3 + (t.bootstrap ? 1 : 0) : 0;
  t.contexts = ContextLengths(results);
  t.decode_speed = AnyDecodeSpeed(results);
  t.budgets = t.grid->spec.has_equal_budget();
  return t;
}

// The title, what ran, and how to read the metric and cost columns.
std::string Summary(const GridResults& results, const Table& t) {
  const ExpandedGrid& grid = *t.grid;
  int total_runs = 0;
  for (const CellOutcome& c : results.cells) total_runs += c.runs.size();
  std::string out = absl::StrCat("# ", grid.name, ": results\n\n");
  absl::StrAppend(&out, results.cells.size(), " cells (", grid.num_invalid(), " invalid), ", total_runs,
                  " runs: ", results.runs(RunState::kFinished), " finished");
  if (t.diverged_runs > 0) absl::StrAppend(&out, " (", t.diverged_runs, " of them diverged)");
  absl::StrAppend(&out, ", ", results.runs(RunState::kFailed), " failed, ", results.runs(RunState::kNotRun),
                  " not run.\n");
  absl::StrAppend(&out, "Metrics are mean ± sample std over the seeds that finished (n in `seeds`)");
  if (t.diverged_runs > 0) {
    absl::StrAppend(&out, "; seeds whose training diverged (loss not finite or above train.divergence_loss) "
                    "are counted in **diverged** (with the step) and left out of the means");
  }
  if (t.has_baseline()) {
    absl::StrAppend(&out, "; Δ = cell mean − baseline mean, baseline **", grid.cells[grid.baseline].label, "**");
  }
  absl::StrAppend(&out,
                  ". Cost columns: parameters, training FLOPs per token (6·N_dense + 12·L·T·d_attn, "
                  "framework/report/cost_model.h), KV-cache bytes per token at float32, training tokens/s "
                  "and training-loop seconds per run (means over seeds).\n\n");
  return out;
}

// The paragraphs on significance, equal budgets and cells with few seeds.
std::string ReadingNotes(const GridResults& results, const Table& t) {
  std::string out;
  if (t.has_baseline()) {
    absl::StrAppend(&out, "Significance of Δ ", t.main, " (cell − baseline), over seeds: **95% CI** from Welch's "
                    "t distribution (Welch–Satterthwaite df), **p** of Welch's two-sided t-test, **p (Holm)** "
                    "adjusted over the ", t.comparison.family_size, " cells tested; `*` marks Δ significant at "
                    "0.05 after Holm.");
    if (!t.grid->hypotheses.empty()) {
      absl::StrAppend(&out, " These comparisons with the baseline were not declared in advance: they are "
                      "**exploratory**, whatever their p.");
    }
    if (t.bootstrap) {
      absl::StrAppend(&out, " **Bootstrap CI**: percentile bootstrap, B = ", kBootstrapResamples,
                      " resamples per group, seed ", kBootstrapSeed, ", for cells where both have ≥ ",
                      kMinSeedsForBootstrap, " seeds.");
    }
    absl::StrAppend(&out, " Per-cell numbers: significance.csv.\n\n");
  }
  if (t.budgets) {
    const EqualBudget& eb = t.grid->spec.equal_budget();
    absl::StrAppend(&out, "Equal budgets: every cell's ", eb.field(), " was solved so that its ",
                    BudgetName(eb.match()), " match the baseline's within ",
                    absl::StrFormat("%g%%", 100 * eb.tolerance()),
                    " (cost model above); **budget Δ** = (cell − baseline) / baseline.\n\n");
  }
  const std::vector<std::string> few_seeds = FewSeedsWarnings(results);
  if (!few_seeds.empty()) {
    absl::StrAppend(&out, "**Warning:** ", few_seeds.size(), " cell", few_seeds.size() == 1 ? " has" : "s have",
                    " fewer than ", kMinSeedsForSignificance,
                    " finished seeds; their intervals and p-values are not to be trusted (see notes).\n\n");
  }
  return out;
}

// The header row and the alignment row.
std::string HeaderRows(const Table& t) {
  std::vector<std::string> header = t.grid->axis_labels;
  header.push_back("seeds");
  if (t.diverged_runs > 0) header.push_back("diverged");
  for (const std::string& m : t.quality) {
    header.push_back(m == t.main ? absl::StrCat("**", m, "**") : m);
    if (t.has_baseline()) header.push_back("Δ");
    if (t.has_baseline() && m == t.main) {
      header.insert(header.end(), {"Δ 95% CI", "p", "p (Holm)"});
      if (t.bootstrap) header.push_back("Δ bootstrap CI");
    }
  }
  // Perplexity per evaluation context (eval.context_lengths), mean ± std.
  for (int32_t length : t.contexts) header.push_back(absl::StrCat("ppl@", length));
  for (const char* h : {"params", "FLOPs/token", "KV B/token", "tokens/s", "train s"}) header.push_back(h);
  if (t.decode_speed) header.push_back("decode tok/s");
  if (t.budgets) {
    const std::string& field = t.grid->spec.equal_budget().field();
    header.push_back(absl::StrCat(field.substr(field.find_last_of('.') + 1), " (solved)"));
    header.push_back("budget Δ");
  }
  header.push_back("notes");
  std::string out = absl::StrCat("| ", absl::StrJoin(header, " | "), " |\n|");
  for (size_t i = 0; i < header.size(); ++i) {
    bool text = i < t.grid->axis_labels.size() || i + 1 == header.size();
    absl::StrAppend(&out, text ? "---|" : "---:|");
  }
  absl::StrAppend(&out, "\n");
  return out;
}

// An invalid cell: a dash for its seeds, every value column empty.
void AppendInvalidCell(const CellOutcome& cell, const Table& t, std::vector<std::string>* row,
                       std::vector<std::string>* notes) {
  row->push_back("–");
  const size_t values = t.quality.size() * (t.has_baseline() ? 2 : 1) + t.significance_columns + 5 +
                        (t.budgets ? 2 : 0) + (t.diverged_runs > 0 ? 1 : 0) + t.contexts.size() +
                        (t.decode_speed ? 1 : 0);
  for (size_t i = 0; i < values; ++i) row->push_back("");
  notes->push_back(absl::StrCat("invalid: ", FirstLine(cell.cell->invalid_reason)));
}

// "3" or "2/3" finished seeds; with divergences anywhere, "2/3 (steps 12, 40)".
void AppendSeedCounts(const CellOutcome& cell, const Table& t, std::vector<std::string>* row) {
  row->push_back(cell.finished() == static_cast<int>(cell.runs.size())
                     ? absl::StrCat(cell.finished())
                     : absl::StrCat(cell.finished(), "/", cell.runs.size()));
  if (t.diverged_runs == 0) return;
  std::vector<std::string> steps;
  for (const RunOutcome& r : cell.runs)
    if (r.diverged()) steps.push_back(absl::StrCat(r.metrics.diverged_at_step()));
  row->push_back(steps.empty() ? "0"
                               : absl::StrCat(steps.size(), "/", cell.runs.size(),
                                              steps.size() == 1 ? " (step " : " (steps ",
                                              absl::StrJoin(steps, ", "), ")"));
}

// Mean ± std of each quality metric, Δ against the baseline, and for the
// main metric its significance columns.
void AppendQuality(const CellOutcome& cell, size_t c, const Table& t, std::vector<std::string>* row,
                   std::vector<std::string>* notes) {
  for (const std::string& m : t.quality) {
    SeedStats s = Summarize(cell.Values(m));
    row->push_back(FormatMeanStd(s, 3));
    if (!t.has_baseline()) continue;
    SeedStats b = Summarize(t.base->Values(m));
    std::string delta =
        s.n > 0 && b.n > 0 && static_cast<int>(c) != t.grid->baseline ? FormatDelta(s.mean - b.mean, 3) : "";
    if (m != t.main) {
      row->push_back(delta);
      continue;
    }
    const std::optional<BaselineComparison>& cmp = t.comparison.cells[c];
    if (cmp && cmp->significant) delta += " \\*";
    row->push_back(delta);
    const bool defined = cmp && cmp->welch.defined;
    row->push_back(defined ? FormatInterval(cmp->welch.ci_low, cmp->welch.ci_high, 3) : "");
    row->push_back(defined ? FormatP(cmp->welch.p) : "");
    row->push_back(defined ? FormatP(*cmp->holm_p) : "");
    if (t.bootstrap)
      row->push_back(cmp && cmp->bootstrap ? FormatInterval(cmp->bootstrap->low, cmp->bootstrap->high, 3) : "");
    if (cmp && !cmp->welch.defined) notes->push_back(absl::StrCat("no test: ", cmp->welch.why_undefined));
  }
}

// Cost, speed and equal-budget columns.
void AppendCosts(const CellOutcome& cell, const Table& t, std::vector<std::string>* row,
                 std::vector<std::string>* notes) {
  if (cell.cost) {
    row->push_back(absl::StrCat(cell.cost->parameters));
    row->push_back(FormatSi(cell.cost->train_flops_per_token));
    row->push_back(absl::StrCat(cell.cost->kv_cache_bytes_per_token));
  } else {
    row->insert(row->end(), {"?", "?", "?"});
    notes->push_back(absl::StrCat("cost unknown: ", FirstLine(cell.cost_error)));
  }
  SeedStats tps = Summarize(cell.Values("tokens_per_second"));
  SeedStats secs = Summarize(cell.Values("train_seconds"));
  row->push_back(tps.n > 0 ? FormatSi(tps.mean) : "");
  row->push_back(secs.n > 0 ? absl::StrFormat("%.1f", secs.mean) : "");
  if (t.decode_speed) {
    SeedStats decode = Summarize(cell.Values("decode_tokens_per_second"));
    row->push_back(decode.n > 0 ? FormatSi(decode.mean) : "");
  }
  if (t.budgets) {
    const std::optional<BudgetMatch>& b = cell.cell->budget;
    row->push_back(b && b->value ? absl::StrCat(*b->value) : "");
    row->push_back(b ? absl::StrFormat("%+.2f%%", 100 * b->deviation) : "");
  }
}

// A valid cell's value columns.
void AppendValidCell(const CellOutcome& cell, size_t c, const Table& t, std::vector<std::string>* row,
                     std::vector<std::string>* notes) {
  AppendSeedCounts(cell, t, row);
  AppendQuality(cell, c, t, row, notes);
  for (int32_t length : t.contexts) {
    SeedStats ppl = Summarize(cell.Values(absl::StrCat("perplexity@", length)));
    row->push_back(ppl.n > 0 ? FormatMeanStd(ppl, 3) : "");
  }
  const int finished = cell.finished();
  if (finished > 0 && finished < kMinSeedsForSignificance)
    notes->push_back(absl::StrCat("fewer than ", kMinSeedsForSignificance, " seeds"));
  AppendCosts(cell, t, row, notes);
  for (const RunOutcome& r : cell.runs) {
    if (r.state == RunState::kFailed)
      notes->push_back(absl::StrCat("seed ", r.run->seed, " failed: ", FailureSummary(r.error)));
    if (r.state == RunState::kNotRun) notes->push_back(absl::StrCat("seed ", r.run->seed, " not run"));
    if (r.diverged())
      notes->push_back(absl::StrFormat("seed %d diverged at step %d (loss %g)", r.run->seed,
                                       r.metrics.diverged_at_step(), r.metrics.diverged_loss()));
  }
}

// Cell c's row: its axis values, its columns, its notes.
std::string CellRow(const GridResults& results, size_t c, const Table& t) {
  const CellOutcome& cell = results.cells[c];
  std::vector<std::string> row;
  for (const std::string& v : cell.cell->axis_values) row.push_back(MdCell(v));
  if (static_cast<int>(c) == t.grid->baseline && !row.empty() && row.back() != "baseline")
    row.back() += " (baseline)";
  std::vector<std::string> notes;
  if (!cell.cell->valid()) {
    AppendInvalidCell(cell, t, &row, &notes);
  } else {
    AppendValidCell(cell, c, t, &row, &notes);
  }
  row.push_back(MdCell(absl::StrJoin(notes, "; ")));
  return absl::StrCat("| ", absl::StrJoin(row, " | "), " |\n");
}

// The scaling section, the plots, and where the per-seed rows are.
std::string Footer(const GridResults& results, const Table& t) {
  std::string out = absl::StrCat("\n", ScalingMarkdown(results, FitScaling(results)));
  if (!t.contexts.empty())
    absl::StrAppend(&out, "\n`ppl@N`: held-out perplexity evaluated at a context of N tokens "
                    "(eval.context_lengths; the model trained at its task's context). A cell whose "
                    "positions cannot go past its training context is invalid (see notes).\n\n"
                    "![perplexity per evaluation context](context_perplexity.svg)\n");
  absl::StrAppend(&out, "\n![", t.main, " per cell](", t.main, ".svg)\n\n![training loss](loss_curves.svg)\n\n",
                  "Per-seed rows: results.csv. Rebuild this file from the run directories with "
                  "`--report_only`.\n");
  return out;
}

}  // namespace

std::string ResultsMarkdown(const GridResults& results) {
  const Table table = TableOf(results);
  std::string out = Summary(results, table) + HypothesesMarkdown(results, TestHypotheses(results)) +
                    ReadingNotes(results, table) + HeaderRows(table);
  for (size_t c = 0; c < results.cells.size(); ++c) absl::StrAppend(&out, CellRow(results, c, table));
  return out + ProbesMarkdown(results) + Footer(results, table);
}

}  // namespace tvlab
