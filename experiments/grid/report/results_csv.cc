#include "experiments/grid/report/results_csv.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/report/results_format.h"
#include "framework/report/stats.h"

namespace tvlab {

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
        row.push_back(value.ok() ? FormatExact(*value) : "");
      }
      if (cell.cost) {
        row.insert(row.end(), {FormatExact(cell.cost->parameters), FormatExact(cell.cost->dense_parameters),
                               FormatExact(cell.cost->train_flops_per_token),
                               FormatExact(cell.cost->kv_cache_bytes_per_token)});
      } else {
        row.resize(row.size() + 4);
      }
      row.push_back(r.run->key);
      row.push_back(CsvField(RelativeTo(r.run->run_dir, grid.results_dir)));
      row.push_back(CsvField(OneLine(r.error)));
      if (budgets) {
        const std::optional<BudgetMatch>& b = cell.cell->budget;
        row.push_back(b && b->value ? absl::StrCat(*b->value) : "");
        row.push_back(b ? FormatExact(b->deviation) : "");
      }
      row.push_back(r.diverged() ? absl::StrCat(r.metrics.diverged_at_step()) : "");
      row.push_back(r.diverged() ? FormatExact(r.metrics.diverged_loss()) : "");
      for (const std::string& m : extra) {
        auto value = r.state == RunState::kFinished ? MetricValue(r.metrics, m)
                                                    : absl::StatusOr<double>(absl::NotFoundError(""));
        row.push_back(value.ok() ? FormatExact(*value) : "");
      }
      absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
    }
  }
  return out;
}

}  // namespace tvlab
