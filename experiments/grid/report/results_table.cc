#include "experiments/grid/results_table.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "experiments/grid/baseline_comparison.h"
#include "experiments/grid/scaling_report.h"
#include "experiments/spec/equal_budget.h"
#include "framework/core/status_macros.h"
#include "framework/io/atomic_file.h"
#include "framework/report/plots.h"
#include "framework/report/stats.h"

namespace tvlab {
namespace {

// Quality columns of results.md, after the main metric.
const char* const kTableMetrics[] = {"token_accuracy", "sequence_accuracy", "eval_loss"};

std::vector<std::string> QualityMetrics(const std::string& main) {
  std::vector<std::string> out = {main};
  for (const char* m : kTableMetrics)
    if (m != main) out.push_back(m);
  return out;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Errors span lines; a CSV row stays one line so grep and `column` work.
std::string OneLine(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  return absl::StrJoin(lines, "; ");
}

std::string MdCell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 140 ? line.substr(0, 137) + "..." : line;
}

// The line of a failure that says why: the run binary's "error: ..." line
// if there is one, else the first line.
std::string FailureSummary(const std::string& error) {
  for (absl::string_view line : absl::StrSplit(error, '\n')) {
    if (absl::StartsWith(line, "error: ")) return FirstLine(std::string(line.substr(7)));
  }
  return FirstLine(error);
}

std::string Num(double v) { return absl::StrFormat("%.9g", v); }

// The mean loss of a cell's finished seeds at the steps they all logged.
std::vector<std::pair<double, double>> MeanCurve(const CellOutcome& cell) {
  std::map<double, std::pair<double, int>> by_step;
  int curves = 0;
  for (const RunOutcome& r : cell.runs) {
    if (r.state != RunState::kFinished || r.diverged() || r.loss_curve.empty()) continue;
    ++curves;
    for (const auto& [step, loss] : r.loss_curve) {
      by_step[step].first += loss;
      by_step[step].second += 1;
    }
  }
  std::vector<std::pair<double, double>> mean;
  for (const auto& [step, sum_count] : by_step)
    if (sum_count.second == curves) mean.emplace_back(step, sum_count.first / curves);
  return mean;
}

std::string RelativeTo(const std::string& path, const std::string& base) {
  std::error_code ignored;
  std::string rel = std::filesystem::relative(path, base, ignored).string();
  return rel.empty() ? path : rel;
}

// How a cell is drawn in both plots. With two or more axes, the colour
// follows the values of all but the last axis and the line dash (bar shade)
// the last axis's value, so e.g. position x placement reads as four colours,
// solid or dashed. With one axis every cell gets its own colour.
struct CellStyle {
  std::string color, dash;
  double bar_opacity = 0.85;
};

CellStyle StyleOf(const ExpandedGrid& grid, size_t cell) {
  const std::vector<std::string>& values = grid.cells[cell].axis_values;
  CellStyle style;
  if (values.size() < 2) {
    style.color = PaletteColor(static_cast<int>(cell));
    return style;
  }
  std::vector<std::vector<std::string>> prefixes;
  std::vector<std::string> last_values;
  for (const GridCell& c : grid.cells) {
    std::vector<std::string> prefix(c.axis_values.begin(), c.axis_values.end() - 1);
    if (std::find(prefixes.begin(), prefixes.end(), prefix) == prefixes.end()) prefixes.push_back(prefix);
    if (std::find(last_values.begin(), last_values.end(), c.axis_values.back()) == last_values.end())
      last_values.push_back(c.axis_values.back());
  }
  std::vector<std::string> prefix(values.begin(), values.end() - 1);
  const int color = static_cast<int>(std::find(prefixes.begin(), prefixes.end(), prefix) - prefixes.begin());
  const int shade = static_cast<int>(std::find(last_values.begin(), last_values.end(), values.back()) -
                                     last_values.begin());
  static const char* kDashes[] = {"", "7 4", "2 3", "9 3 2 3"};
  style.color = PaletteColor(color);
  style.dash = kDashes[shade % 4];
  style.bar_opacity = 0.85 - 0.45 * (shade % 4) / 3.0;
  return style;
}

// The context lengths any finished run evaluated at (eval.context_lengths),
// ascending: results.md and results.csv get a perplexity column per length.
std::vector<int32_t> ContextLengths(const GridResults& results) {
  std::vector<int32_t> lengths;
  for (const CellOutcome& cell : results.cells)
    for (const RunOutcome& r : cell.runs)
      if (r.state == RunState::kFinished)
        for (const ContextEval& e : r.metrics.context_evals()) lengths.push_back(e.context_length());
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

// Whether any finished run measured its decoding speed (eval.decode_speed_tokens).
bool AnyDecodeSpeed(const GridResults& results) {
  for (const CellOutcome& cell : results.cells)
    for (const RunOutcome& r : cell.runs)
      if (r.state == RunState::kFinished && r.metrics.has_decode_tokens_per_second()) return true;
  return false;
}

}  // namespace

std::vector<double> CellOutcome::Values(const std::string& metric) const {
  std::vector<double> out;
  for (const RunOutcome& r : runs) {
    if (r.state != RunState::kFinished || r.diverged()) continue;
    auto v = MetricValue(r.metrics, metric);
    if (v.ok()) out.push_back(*v);
  }
  return out;
}

int CellOutcome::finished() const {
  int n = 0;
  for (const RunOutcome& r : runs) n += r.state == RunState::kFinished && !r.diverged();
  return n;
}

int CellOutcome::diverged() const {
  int n = 0;
  for (const RunOutcome& r : runs) n += r.diverged();
  return n;
}

int GridResults::runs(RunState state) const {
  int n = 0;
  for (const CellOutcome& c : cells)
    for (const RunOutcome& r : c.runs) n += r.state == state;
  return n;
}

GridResults CollectResults(const ExpandedGrid& grid) {
  GridResults results;
  results.grid = &grid;
  for (const GridCell& cell : grid.cells) {
    CellOutcome out;
    out.cell = &cell;
    for (const GridRun& run : cell.runs) {
      RunOutcome r;
      r.run = &run;
      r.state = ReadRunState(run.run_dir);
      if (r.state == RunState::kFinished) {
        auto metrics = ReadMetrics(run.run_dir);
        if (metrics.ok()) {
          r.metrics = *metrics;
          r.loss_curve = ReadLossCurve(run.run_dir);
        } else {
          r.state = RunState::kFailed;
          r.error = std::string(metrics.status().message());
        }
      } else if (r.state == RunState::kFailed) {
        r.error = ReadFailure(run.run_dir);
      }
      out.runs.push_back(std::move(r));
    }
    if (!cell.runs.empty()) {
      auto cost = CostOfExperiment(cell.runs[0].spec);
      if (cost.ok()) {
        out.cost = *cost;
      } else {
        out.cost_error = std::string(cost.status().message());
      }
    }
    results.cells.push_back(std::move(out));
  }
  return results;
}

absl::Status ValidateMainMetric(const std::string& name) {
  absl::Status known = CheckMetricName(name);
  if (!known.ok()) return absl::InvalidArgumentError(absl::StrCat("main_metric: ", known.message()));
  return absl::OkStatus();
}

std::string FormatSi(double value) {
  const double a = std::abs(value);
  if (a >= 1e9) return absl::StrFormat("%.3gG", value / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.3gM", value / 1e6);
  if (a >= 1e3) return absl::StrFormat("%.3gk", value / 1e3);
  return absl::StrFormat("%.3g", value);
}

std::string ResultsCsv(const GridResults& results) {
  const ExpandedGrid& grid = *results.grid;
  std::vector<std::string> header = {"cell"};
  for (const std::string& label : grid.axis_labels) header.push_back(label);
  const std::vector<std::string> metrics = {"token_accuracy", "sequence_accuracy", "eval_loss",
                                            "final_train_loss", "tokens_per_second", "train_seconds",
                                            "steps"};
  for (const char* h : {"seed", "state", "baseline"}) header.push_back(h);
  header.insert(header.end(), metrics.begin(), metrics.end());
  for (const char* h : {"parameters", "dense_parameters", "train_flops_per_token",
                        "kv_cache_bytes_per_token", "key", "run_dir", "error"})
    header.push_back(h);
  const bool budgets = grid.spec.has_equal_budget();
  if (budgets) header.insert(header.end(), {"solved_value", "budget_deviation"});
  header.insert(header.end(), {"diverged_at_step", "diverged_loss"});
  // Only for grids that measure them, so other grids' columns stay as they were.
  std::vector<std::string> extra;
  for (int32_t length : ContextLengths(results)) extra.push_back(absl::StrCat("perplexity@", length));
  if (AnyDecodeSpeed(results)) extra.push_back("decode_tokens_per_second");
  header.insert(header.end(), extra.begin(), extra.end());
  std::string out = absl::StrCat(absl::StrJoin(header, ","), "\n");

  for (size_t c = 0; c < results.cells.size(); ++c) {
    const CellOutcome& cell = results.cells[c];
    std::vector<std::string> prefix = {CsvField(cell.cell->label)};
    for (const std::string& v : cell.cell->axis_values) prefix.push_back(CsvField(v));
    const std::string baseline = static_cast<int>(c) == grid.baseline ? "true" : "false";
    if (!cell.cell->valid()) {
      std::vector<std::string> row = prefix;
      row.insert(row.end(), {"", "invalid", baseline});
      row.resize(row.size() + metrics.size() + 6);
      row.push_back(CsvField(OneLine(cell.cell->invalid_reason)));
      row.resize(row.size() + (budgets ? 2 : 0) + 2 + extra.size());
      absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
      continue;
    }
    for (const RunOutcome& r : cell.runs) {
      std::vector<std::string> row = prefix;
      row.insert(row.end(), {absl::StrCat(r.run->seed), r.diverged() ? "diverged" : RunStateName(r.state), baseline});
      for (const std::string& m : metrics) {
        // Empty for an unfinished run and for a metric the run's task lacks.
        auto value = r.state == RunState::kFinished ? MetricValue(r.metrics, m)
                                                    : absl::StatusOr<double>(absl::NotFoundError(""));
        row.push_back(value.ok() ? Num(*value) : "");
      }
      if (cell.cost) {
        row.insert(row.end(), {Num(cell.cost->parameters), Num(cell.cost->dense_parameters),
                               Num(cell.cost->train_flops_per_token),
                               Num(cell.cost->kv_cache_bytes_per_token)});
      } else {
        row.resize(row.size() + 4);
      }
      row.push_back(r.run->key);
      row.push_back(CsvField(RelativeTo(r.run->run_dir, grid.results_dir)));
      row.push_back(CsvField(OneLine(r.error)));
      if (budgets) {
        const std::optional<BudgetMatch>& b = cell.cell->budget;
        row.push_back(b && b->value ? absl::StrCat(*b->value) : "");
        row.push_back(b ? Num(b->deviation) : "");
      }
      row.push_back(r.diverged() ? absl::StrCat(r.metrics.diverged_at_step()) : "");
      row.push_back(r.diverged() ? Num(r.metrics.diverged_loss()) : "");
      for (const std::string& m : extra) {
        auto value = r.state == RunState::kFinished ? MetricValue(r.metrics, m)
                                                    : absl::StatusOr<double>(absl::NotFoundError(""));
        row.push_back(value.ok() ? Num(*value) : "");
      }
      absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
    }
  }
  return out;
}

std::string ResultsMarkdown(const GridResults& results) {
  const ExpandedGrid& grid = *results.grid;
  const std::string& main = grid.spec.main_metric();
  const std::vector<std::string> quality = QualityMetrics(main);
  const bool has_baseline = grid.baseline >= 0;
  const CellOutcome* base = has_baseline ? &results.cells[grid.baseline] : nullptr;

  int total_runs = 0;
  for (const CellOutcome& c : results.cells) total_runs += c.runs.size();
  std::string out = absl::StrCat("# ", grid.name, ": results\n\n");
  absl::StrAppend(&out, results.cells.size(), " cells (", grid.num_invalid(), " invalid), ", total_runs,
                  " runs: ", results.runs(RunState::kFinished), " finished");
  int diverged_runs = 0;
  for (const CellOutcome& c : results.cells) diverged_runs += c.diverged();
  if (diverged_runs > 0) absl::StrAppend(&out, " (", diverged_runs, " of them diverged)");
  absl::StrAppend(&out, ", ", results.runs(RunState::kFailed), " failed, ", results.runs(RunState::kNotRun),
                  " not run.\n");
  absl::StrAppend(&out, "Metrics are mean ± sample std over the seeds that finished (n in `seeds`)");
  if (diverged_runs > 0) {
    absl::StrAppend(&out, "; seeds whose training diverged (loss not finite or above train.divergence_loss) "
                    "are counted in **diverged** (with the step) and left out of the means");
  }
  if (has_baseline) {
    absl::StrAppend(&out, "; Δ = cell mean − baseline mean, baseline **", grid.cells[grid.baseline].label, "**");
  }
  absl::StrAppend(&out,
                  ". Cost columns: parameters, training FLOPs per token (6·N_dense + 12·L·T·d_attn, "
                  "framework/report/cost_model.h), KV-cache bytes per token at float32, training tokens/s "
                  "and training-loop seconds per run (means over seeds).\n\n");

  const GridComparison comparison = CompareWithBaseline(results, main);
  const bool bootstrap = comparison.any_bootstrap();
  // Columns after the main metric's Δ: Welch CI, p, Holm p, bootstrap CI.
  const size_t significance_columns = has_baseline ? 3 + (bootstrap ? 1 : 0) : 0;
  if (has_baseline) {
    absl::StrAppend(&out, "Significance of Δ ", main, " (cell − baseline), over seeds: **95% CI** from Welch's "
                    "t distribution (Welch–Satterthwaite df), **p** of Welch's two-sided t-test, **p (Holm)** "
                    "adjusted over the ", comparison.family_size, " cells tested; `*` marks Δ significant at 0.05 "
                    "after Holm.");
    if (bootstrap) {
      absl::StrAppend(&out, " **Bootstrap CI**: percentile bootstrap, B = ", kBootstrapResamples,
                      " resamples per group, seed ", kBootstrapSeed, ", for cells where both have ≥ ",
                      kMinSeedsForBootstrap, " seeds.");
    }
    absl::StrAppend(&out, " Per-cell numbers: significance.csv.\n\n");
  }
  if (grid.spec.has_equal_budget()) {
    const EqualBudget& eb = grid.spec.equal_budget();
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

  std::vector<std::string> header = grid.axis_labels;
  header.push_back("seeds");
  if (diverged_runs > 0) header.push_back("diverged");
  for (const std::string& m : quality) {
    header.push_back(m == main ? absl::StrCat("**", m, "**") : m);
    if (has_baseline) header.push_back("Δ");
    if (has_baseline && m == main) {
      header.insert(header.end(), {"Δ 95% CI", "p", "p (Holm)"});
      if (bootstrap) header.push_back("Δ bootstrap CI");
    }
  }
  // Perplexity per evaluation context (eval.context_lengths), mean ± std.
  const std::vector<int32_t> contexts = ContextLengths(results);
  for (int32_t length : contexts) header.push_back(absl::StrCat("ppl@", length));
  for (const char* h : {"params", "FLOPs/token", "KV B/token", "tokens/s", "train s"}) header.push_back(h);
  const bool decode_speed = AnyDecodeSpeed(results);
  if (decode_speed) header.push_back("decode tok/s");
  const bool budgets = grid.spec.has_equal_budget();
  if (budgets) {
    const std::string& field = grid.spec.equal_budget().field();
    header.push_back(absl::StrCat(field.substr(field.find_last_of('.') + 1), " (solved)"));
    header.push_back("budget Δ");
  }
  header.push_back("notes");
  absl::StrAppend(&out, "| ", absl::StrJoin(header, " | "), " |\n|");
  for (size_t i = 0; i < header.size(); ++i) {
    bool text = i < grid.axis_labels.size() || i + 1 == header.size();
    absl::StrAppend(&out, text ? "---|" : "---:|");
  }
  absl::StrAppend(&out, "\n");

  for (size_t c = 0; c < results.cells.size(); ++c) {
    const CellOutcome& cell = results.cells[c];
    std::vector<std::string> row;
    for (const std::string& v : cell.cell->axis_values) row.push_back(MdCell(v));
    if (static_cast<int>(c) == grid.baseline && !row.empty() && row.back() != "baseline") row.back() += " (baseline)";
    std::vector<std::string> notes;
    if (!cell.cell->valid()) {
      row.push_back("–");
      for (size_t i = 0; i < quality.size() * (has_baseline ? 2 : 1) + significance_columns + 5 + (budgets ? 2 : 0) +
                                 (diverged_runs > 0 ? 1 : 0) + contexts.size() + (decode_speed ? 1 : 0);
           ++i)
        row.push_back("");
      notes.push_back(absl::StrCat("invalid: ", FirstLine(cell.cell->invalid_reason)));
    } else {
      row.push_back(cell.finished() == static_cast<int>(cell.runs.size())
                        ? absl::StrCat(cell.finished())
                        : absl::StrCat(cell.finished(), "/", cell.runs.size()));
      if (diverged_runs > 0) {
        // "2/3 (steps 12, 40)": diverged seeds of the cell and where.
        std::vector<std::string> steps;
        for (const RunOutcome& r : cell.runs)
          if (r.diverged()) steps.push_back(absl::StrCat(r.metrics.diverged_at_step()));
        row.push_back(steps.empty() ? "0"
                                    : absl::StrCat(steps.size(), "/", cell.runs.size(),
                                                   steps.size() == 1 ? " (step " : " (steps ",
                                                   absl::StrJoin(steps, ", "), ")"));
      }
      for (const std::string& m : quality) {
        SeedStats s = Summarize(cell.Values(m));
        row.push_back(FormatMeanStd(s, 3));
        if (!has_baseline) continue;
        SeedStats b = Summarize(base->Values(m));
        std::string delta =
            s.n > 0 && b.n > 0 && static_cast<int>(c) != grid.baseline ? FormatDelta(s.mean - b.mean, 3) : "";
        if (m != main) {
          row.push_back(delta);
          continue;
        }
        const std::optional<BaselineComparison>& cmp = comparison.cells[c];
        if (cmp && cmp->significant) delta += " \\*";
        row.push_back(delta);
        const bool defined = cmp && cmp->welch.defined;
        row.push_back(defined ? FormatInterval(cmp->welch.ci_low, cmp->welch.ci_high, 3) : "");
        row.push_back(defined ? FormatP(cmp->welch.p) : "");
        row.push_back(defined ? FormatP(*cmp->holm_p) : "");
        if (bootstrap) row.push_back(cmp && cmp->bootstrap ? FormatInterval(cmp->bootstrap->low, cmp->bootstrap->high, 3) : "");
        if (cmp && !cmp->welch.defined) notes.push_back(absl::StrCat("no test: ", cmp->welch.why_undefined));
      }
      for (int32_t length : contexts) {
        SeedStats ppl = Summarize(cell.Values(absl::StrCat("perplexity@", length)));
        row.push_back(ppl.n > 0 ? FormatMeanStd(ppl, 3) : "");
      }
      const int finished = cell.finished();
      if (finished > 0 && finished < kMinSeedsForSignificance)
        notes.push_back(absl::StrCat("fewer than ", kMinSeedsForSignificance, " seeds"));
      if (cell.cost) {
        row.push_back(absl::StrCat(cell.cost->parameters));
        row.push_back(FormatSi(cell.cost->train_flops_per_token));
        row.push_back(absl::StrCat(cell.cost->kv_cache_bytes_per_token));
      } else {
        row.insert(row.end(), {"?", "?", "?"});
        notes.push_back(absl::StrCat("cost unknown: ", FirstLine(cell.cost_error)));
      }
      SeedStats tps = Summarize(cell.Values("tokens_per_second"));
      SeedStats secs = Summarize(cell.Values("train_seconds"));
      row.push_back(tps.n > 0 ? FormatSi(tps.mean) : "");
      row.push_back(secs.n > 0 ? absl::StrFormat("%.1f", secs.mean) : "");
      if (decode_speed) {
        SeedStats decode = Summarize(cell.Values("decode_tokens_per_second"));
        row.push_back(decode.n > 0 ? FormatSi(decode.mean) : "");
      }
      if (budgets) {
        const std::optional<BudgetMatch>& b = cell.cell->budget;
        row.push_back(b && b->value ? absl::StrCat(*b->value) : "");
        row.push_back(b ? absl::StrFormat("%+.2f%%", 100 * b->deviation) : "");
      }
      for (const RunOutcome& r : cell.runs) {
        if (r.state == RunState::kFailed)
          notes.push_back(absl::StrCat("seed ", r.run->seed, " failed: ", FailureSummary(r.error)));
        if (r.state == RunState::kNotRun) notes.push_back(absl::StrCat("seed ", r.run->seed, " not run"));
        if (r.diverged())
          notes.push_back(absl::StrFormat("seed %d diverged at step %d (loss %g)", r.run->seed,
                                          r.metrics.diverged_at_step(), r.metrics.diverged_loss()));
      }
    }
    row.push_back(MdCell(absl::StrJoin(notes, "; ")));
    absl::StrAppend(&out, "| ", absl::StrJoin(row, " | "), " |\n");
  }
  absl::StrAppend(&out, "\n", ScalingMarkdown(results, FitScaling(results)));
  if (!contexts.empty())
    absl::StrAppend(&out, "\n`ppl@N`: held-out perplexity evaluated at a context of N tokens "
                    "(eval.context_lengths; the model trained at its task's context). A cell whose "
                    "positions cannot go past its training context is invalid (see notes).\n\n"
                    "![perplexity per evaluation context](context_perplexity.svg)\n");
  absl::StrAppend(&out, "\n![", main, " per cell](", main, ".svg)\n\n![training loss](loss_curves.svg)\n\n",
                  "Per-seed rows: results.csv. Rebuild this file from the run directories with "
                  "`--report_only`.\n");
  return out;
}

std::string LossCurvesSvg(const GridResults& results) {
  LinePlotSpec plot;
  plot.title = absl::StrCat(results.grid->name, ": training loss (mean over seeds; seeds faint)");
  plot.x_label = "step";
  plot.y_label = "training loss";
  plot.log_y = true;
  for (size_t c = 0; c < results.cells.size(); ++c) {
    const CellOutcome& cell = results.cells[c];
    const CellStyle style = StyleOf(*results.grid, c);
    for (const RunOutcome& r : cell.runs) {
      if (r.state != RunState::kFinished || r.diverged() || cell.finished() < 2) continue;
      LineSeries s;
      s.color = style.color, s.width = 1, s.opacity = 0.3;
      for (const auto& [step, loss] : r.loss_curve) s.x.push_back(step), s.y.push_back(loss);
      plot.series.push_back(std::move(s));
    }
    std::vector<std::pair<double, double>> mean = MeanCurve(cell);
    if (mean.empty()) continue;
    LineSeries s;
    s.label = cell.cell->label;
    s.color = style.color, s.dash = style.dash, s.width = 2.2;
    for (const auto& [step, loss] : mean) s.x.push_back(step), s.y.push_back(loss);
    plot.series.push_back(std::move(s));
  }
  return RenderLinePlot(plot);
}

std::string MainMetricSvg(const GridResults& results) {
  const std::string& main = results.grid->spec.main_metric();
  BarChartSpec chart;
  chart.title = absl::StrCat(results.grid->name, ": ", main, " per cell (bar = mean, whiskers = ±1 std, dots = seeds)");
  chart.value_label = main;
  for (size_t c = 0; c < results.cells.size(); ++c) {
    const CellOutcome& cell = results.cells[c];
    Bar bar;
    bar.label = cell.cell->label;
    const CellStyle style = StyleOf(*results.grid, c);
    bar.color = style.color;
    bar.opacity = style.bar_opacity;
    bar.baseline = static_cast<int>(c) == results.grid->baseline;
    bar.points = cell.Values(main);
    SeedStats s = Summarize(bar.points);
    bar.n = s.n, bar.mean = s.mean, bar.std = s.std;
    if (!cell.cell->valid()) bar.note = "invalid cell";
    std::vector<std::string> missing;
    int failed = 0, not_run = 0;
    for (const RunOutcome& r : cell.runs) failed += r.state == RunState::kFailed, not_run += r.state == RunState::kNotRun;
    if (cell.diverged() > 0) missing.push_back(absl::StrCat(cell.diverged(), " of ", cell.runs.size(), " seeds diverged"));
    if (failed > 0) missing.push_back(absl::StrCat(failed, " of ", cell.runs.size(), " seeds failed"));
    if (not_run > 0) missing.push_back(absl::StrCat(not_run, " of ", cell.runs.size(), " seeds not run"));
    if (!missing.empty()) bar.note = absl::StrJoin(missing, ", ");
    chart.bars.push_back(std::move(bar));
  }
  return RenderBarChart(chart);
}

std::string ContextPerplexitySvg(const GridResults& results) {
  LinePlotSpec plot;
  plot.title = absl::StrCat(results.grid->name, ": held-out perplexity per evaluation context (mean over seeds; seeds faint)");
  plot.x_label = "evaluation context (tokens)";
  plot.y_label = "perplexity";
  plot.log_x = true;
  plot.log_y = true;
  const std::vector<int32_t> lengths = ContextLengths(results);
  for (size_t c = 0; c < results.cells.size(); ++c) {
    const CellOutcome& cell = results.cells[c];
    const CellStyle style = StyleOf(*results.grid, c);
    LineSeries mean;
    mean.label = cell.cell->label;
    mean.color = style.color, mean.dash = style.dash, mean.width = 2.2;
    for (const RunOutcome& r : cell.runs) {
      if (r.state != RunState::kFinished || r.diverged() || r.metrics.context_evals_size() == 0) continue;
      LineSeries seed;
      seed.color = style.color, seed.width = 1, seed.opacity = 0.3;
      for (const ContextEval& e : r.metrics.context_evals())
        if (e.has_perplexity()) seed.x.push_back(e.context_length()), seed.y.push_back(e.perplexity());
      plot.series.push_back(std::move(seed));
    }
    for (int32_t length : lengths) {
      SeedStats s = Summarize(cell.Values(absl::StrCat("perplexity@", length)));
      if (s.n > 0) mean.x.push_back(length), mean.y.push_back(s.mean);
    }
    if (!mean.x.empty()) plot.series.push_back(std::move(mean));
  }
  return RenderLinePlot(plot);
}

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
  if (results.grid->spec.has_scaling()) files.emplace_back("scaling.svg", ScalingSvg(results, FitScaling(results)));
  if (!ContextLengths(results).empty()) files.emplace_back("context_perplexity.svg", ContextPerplexitySvg(results));
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    const std::string path = dir + "/" + name;
    if (absl::Status s = WriteFileAtomically(fs, path, text); !s.ok()) return s;
    written.push_back(path);
  }
  return written;
}

}  // namespace tvlab
