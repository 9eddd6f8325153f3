#include "experiments/grid/report/ladder_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/expand/ladder.h"
#include "experiments/grid/report/results_format.h"

namespace tvlab {
namespace {

// One run's numbers. The tokens come from metrics.json's tokens_trained; a
// run from a trainer older than that field has tokens_per_second x
// train_seconds, which is the same count (the trainer derives the rate
// from it).
LadderRun MeasureRun(const RunOutcome& r, const LadderRungResult& rung, double target) {
  LadderRun out;
  out.seed = r.run->seed;
  out.run_dir = r.run->run_dir;
  out.state = r.diverged() ? "diverged" : RunStateName(r.state);
  out.error = r.error;
  if (r.state != RunState::kFinished || r.diverged() || !rung.has_cost) return out;
  const RunMetrics& m = r.metrics;
  out.measured = true;
  out.tokens_trained = m.has_tokens_trained() ? m.tokens_trained() : m.tokens_per_second() * m.train_seconds();
  out.train_flops = out.tokens_trained * rung.flops_per_token;
  out.has_final_loss = m.has_eval_loss();
  out.final_loss = m.eval_loss();
  const double per_step = m.steps() > 0 ? out.tokens_trained / m.steps() : 0;
  for (const auto& [step, loss] : ReadLogCurve(r.run->run_dir, "eval_loss")) {
    out.eval_flops.push_back((step + 1) * per_step * rung.flops_per_token);
    out.eval_loss.push_back(loss);
  }
  out.target = FindTargetCrossing(out.eval_flops, out.eval_loss, target);
  return out;
}

LadderRungResult MeasureRung(const ExpandedGrid& grid, const CellOutcome& c) {
  const Ladder& ladder = grid.spec.ladder();
  LadderRungResult out;
  out.rung = c.cell->axis_values[grid.ladder_column];
  if (!c.cell->valid()) {
    out.note = absl::StrCat("invalid: ", OneLine(c.cell->invalid_reason));
    return out;
  }
  const ModelSpec& model = c.cell->runs[0].spec.model();
  out.d_model = model.d_model(), out.num_layers = model.num_layers();
  out.num_heads = model.num_heads(), out.d_ff = model.d_ff();
  out.has_cost = c.cost.has_value();
  if (c.cost) {
    out.parameters = static_cast<double>(c.cost->parameters);
    out.flops_per_token = c.cost->train_flops_per_token;
  } else {
    out.note = absl::StrCat("no cost estimate, so no FLOPs: ", OneLine(c.cost_error));
  }
  std::vector<double> finals, flops, targets;
  for (const RunOutcome& r : c.runs) {
    out.runs.push_back(MeasureRun(r, out, ladder.target_loss()));
    const LadderRun& run = out.runs.back();
    if (!run.measured) continue;
    ++out.finished;
    flops.push_back(run.train_flops);
    if (run.has_final_loss) finals.push_back(run.final_loss);
    if (run.target.reached()) targets.push_back(run.target.flops), ++out.reached;
    out.at_or_before += run.target.kind == TargetCrossing::Kind::kAtOrBefore;
  }
  out.final_loss = MeanCi(finals, ladder.confidence());
  out.train_flops = MeanCi(flops, ladder.confidence());
  out.target_complete = out.finished > 0 && out.reached == out.finished;
  if (out.target_complete) out.target_flops = MeanCi(targets, ladder.confidence());
  return out;
}

std::string Num(double v) { return FormatExact(v); }

// "mean,low,high" (low and high empty when the interval is undefined).
std::vector<std::string> Interval(const MeanInterval& m, bool present) {
  if (!present || m.n == 0) return {"", "", ""};
  return {Num(m.mean), m.defined ? Num(m.low) : "", m.defined ? Num(m.high) : ""};
}

}  // namespace

std::vector<LadderVariant> LadderVariants(const GridResults& results) {
  const ExpandedGrid& grid = *results.grid;
  std::vector<LadderVariant> variants;
  if (!grid.spec.has_ladder() || grid.ladder_column < 0) return variants;
  for (const CellOutcome& c : results.cells) {
    const std::string label = LadderVariantLabel(grid, *c.cell);
    auto it = std::find_if(variants.begin(), variants.end(), [&](const LadderVariant& v) { return v.label == label; });
    if (it == variants.end()) it = variants.insert(variants.end(), LadderVariant{label});
    it->rungs.push_back(MeasureRung(grid, c));
    const LadderRungResult& rung = it->rungs.back();
    for (const LadderRun& run : rung.runs) {
      if (!run.measured || !run.has_final_loss) continue;
      it->compute.push_back(run.train_flops);
      it->parameters.push_back(rung.parameters);
      it->loss.push_back(run.final_loss);
    }
  }
  for (LadderVariant& v : variants) {
    v.fit_compute = FitPowerLaw(v.compute, v.loss);
    v.fit_parameters = FitPowerLaw(v.parameters, v.loss);
  }
  return variants;
}

std::vector<std::pair<int, int>> LadderPairs(const GridSpec& spec, const std::vector<LadderVariant>& variants) {
  std::vector<std::pair<int, int>> pairs;
  auto index = [&](const std::string& label) {
    for (size_t i = 0; i < variants.size(); ++i)
      if (variants[i].label == label) return static_cast<int>(i);
    return -1;
  };
  if (spec.ladder().compare_size() == 2) {
    const int a = index(spec.ladder().compare(0)), b = index(spec.ladder().compare(1));
    if (a >= 0 && b >= 0) pairs.emplace_back(a, b);  // both checked when the grid was expanded
    return pairs;
  }
  for (size_t i = 0; i < variants.size(); ++i)
    for (size_t j = i + 1; j < variants.size(); ++j) pairs.emplace_back(static_cast<int>(i), static_cast<int>(j));
  return pairs;
}

std::string LadderCsv(const GridResults& results, const std::vector<LadderVariant>& variants) {
  const ExpandedGrid& grid = *results.grid;
  const Ladder& ladder = grid.spec.ladder();
  std::string out = absl::StrCat(
      "variant,", LadderColumn(ladder),
      ",d_model,num_layers,num_heads,d_ff,parameters,train_flops_per_token,seeds,finished,train_flops_mean,"
      "final_eval_loss_mean,final_eval_loss_ci_low,final_eval_loss_ci_high,target_loss,reached,"
      "reached_at_or_before,target_flops_mean,target_flops_ci_low,target_flops_ci_high,confidence,note\n");
  for (const LadderVariant& v : variants) {
    for (const LadderRungResult& r : v.rungs) {
      std::vector<std::string> row = {CsvField(v.label), CsvField(r.rung)};
      for (int64_t x : {r.d_model, r.num_layers, r.num_heads, r.d_ff}) row.push_back(r.d_model > 0 ? Num(x) : "");
      row.push_back(r.has_cost ? Num(r.parameters) : "");
      row.push_back(r.has_cost ? Num(r.flops_per_token) : "");
      row.push_back(absl::StrCat(r.runs.size()));
      row.push_back(absl::StrCat(r.finished));
      row.push_back(r.finished > 0 ? Num(r.train_flops.mean) : "");
      for (const std::string& s : Interval(r.final_loss, true)) row.push_back(s);
      row.insert(row.end(), {Num(ladder.target_loss()), absl::StrCat(r.reached), absl::StrCat(r.at_or_before)});
      for (const std::string& s : Interval(r.target_flops, r.target_complete)) row.push_back(s);
      row.push_back(Num(ladder.confidence()));
      std::string note = r.note;
      if (r.finished > r.reached)
        note = absl::StrCat(note, note.empty() ? "" : "; ", "target not reached by ", r.finished - r.reached, " of ",
                            r.finished, " seed(s): no mean");
      row.push_back(CsvField(note));
      absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
    }
  }
  return out;
}

std::string LadderRunsCsv(const GridResults& results, const std::vector<LadderVariant>& variants) {
  std::string out = absl::StrCat(
      "variant,", LadderColumn(results.grid->spec.ladder()),
      ",seed,state,tokens_trained,train_flops,final_eval_loss,evaluations,target_status,target_flops,"
      "best_eval_loss,run_dir,error\n");
  for (const LadderVariant& v : variants) {
    for (const LadderRungResult& r : v.rungs) {
      for (const LadderRun& run : r.runs) {
        std::vector<std::string> row = {CsvField(v.label), CsvField(r.rung), absl::StrCat(run.seed), run.state};
        if (run.measured) {
          row.insert(row.end(), {Num(run.tokens_trained), Num(run.train_flops),
                                 run.has_final_loss ? Num(run.final_loss) : "", absl::StrCat(run.eval_loss.size()),
                                 TargetKindName(run.target.kind), run.target.reached() ? Num(run.target.flops) : "",
                                 run.eval_loss.empty() ? "" : Num(run.target.best_loss)});
        } else {
          row.resize(row.size() + 7);
        }
        row.push_back(CsvField(RelativeTo(run.run_dir, results.grid->results_dir)));
        row.push_back(CsvField(OneLine(run.error)));
        absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
      }
    }
  }
  return out;
}

}  // namespace tvlab
