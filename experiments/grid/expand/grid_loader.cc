#include "experiments/grid/expand/grid_loader.h"

#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/expand/grid_axes.h"
#include "experiments/grid/expand/grid_forms.h"
#include "experiments/grid/expand/hypotheses.h"
#include "experiments/grid/expand/ladder.h"
#include "experiments/grid/expand/lr_sweep.h"
#include "experiments/grid/expand/report_probes.h"
#include "experiments/grid/expand/run_key.h"
#include "framework/core/status_macros.h"
#include "framework/data/load_task.h"
#include "framework/spec/spec_loader.h"
#include "framework/spec/text_format_errors.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace tvlab {
namespace {

// The run's key; or, where only a run directory under a key an earlier
// binary gave the same spec exists (run_key.h, OlderRunKeys), that key, so
// the finished run is found instead of trained again.
std::string FoundRunKey(const std::string& output_dir, const Experiment& spec) {
  const std::string key = RunKey(spec);
  const std::string runs = absl::StrCat(output_dir, "/runs/");
  if (std::filesystem::exists(runs + key)) return key;
  for (const std::string& older : OlderRunKeys(spec))
    if (std::filesystem::exists(runs + older)) return older;
  return key;
}

std::string DirOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string StemOf(const std::string& path) {
  std::string file = path.substr(path.find_last_of('/') + 1);
  return file.substr(0, file.find('.'));
}

std::string JoinPath(const std::string& dir, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return dir + "/" + path;
}

absl::StatusOr<Experiment> BaseExperiment(const GridSpec& spec, const std::string& grid_path,
                                          std::string* default_name) {
  if (spec.has_base()) {
    *default_name = StemOf(grid_path);
    Experiment base = spec.base();
    ResolveTaskPaths(&base, grid_path);  // an inline base's files are relative to the grid
    return base;
  }
  if (spec.base_spec().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        grid_path, ": the grid has no base experiment; set base_spec: \"path/to/spec.pbtxt\" "
                   "(relative to the grid file) or an inline base { ... }"));
  }
  std::string path = JoinPath(DirOf(grid_path), spec.base_spec());
  *default_name = StemOf(path);
  auto base = ParseSpecFile(path);
  if (!base.ok()) {
    return absl::Status(base.status().code(),
                        absl::StrCat(grid_path, ": base_spec: ", base.status().message()));
  }
  ResolveTaskPaths(&*base, path);  // as LoadExperiment: data files relative to the base spec
  return base;
}

}  // namespace

int ExpandedGrid::num_invalid() const {
  int n = 0;
  for (const GridCell& c : cells) n += !c.valid();
  return n;
}

absl::StatusOr<GridSpec> ParseGridFile(const std::string& path) {
  std::string text;
  TVLAB_RETURN_IF_ERROR(ReadTextFile(path, "grid file", &text));
  GridSpec spec;
  TVLAB_RETURN_IF_ERROR(ParseTextProto(text, path, &spec));
  return spec;
}

absl::StatusOr<ExpandedGrid> ExpandGrid(const GridSpec& spec, const std::string& grid_path,
                                        const std::string& working_dir) {
  ExpandedGrid grid;
  grid.spec = spec;
  grid.name = spec.name().empty() ? StemOf(grid_path) : spec.name();
  grid.output_dir = spec.has_output_dir() ? JoinPath(DirOf(grid_path), spec.output_dir())
                                          : JoinPath(working_dir, "runs/" + grid.name);
  grid.results_dir =
      spec.has_results_dir() ? JoinPath(DirOf(grid_path), spec.results_dir()) : grid.output_dir;

  std::string base_name;
  TVLAB_ASSIGN_OR_RETURN(Experiment base, BaseExperiment(spec, grid_path, &base_name));

  TVLAB_RETURN_IF_ERROR(CheckGridSize(spec));  // before anything is expanded
  // No seeds list: one run per cell with whatever seed the spec ends up with.
  std::vector<std::optional<uint64_t>> seeds(spec.seeds().begin(), spec.seeds().end());
  if (seeds.empty()) seeds.push_back(std::nullopt);
  if (std::set<uint64_t>(spec.seeds().begin(), spec.seeds().end()).size() != spec.seeds().size())
    return absl::InvalidArgumentError("seeds: a seed is listed twice");

  // The cells' labels and overrides, from the axes or the ablation rows.
  if (spec.has_ablation()) {
    TVLAB_RETURN_IF_ERROR(AblationCells(spec, base, &grid));
  } else {
    TVLAB_RETURN_IF_ERROR(AxisCells(spec, &grid));
  }
  auto seed_override = [](const std::optional<uint64_t>& seed) {
    return seed ? std::vector<std::string>{absl::StrCat("seed=", *seed)} : std::vector<std::string>{};
  };
  auto resolve = [&](const GridCell& cell, const std::vector<std::string>& extra) {
    std::vector<std::string> overrides = cell.overrides;
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    return ResolveExperiment(base, overrides, cell.label, base_name);
  };

  // First: the ladder refuses the forms it does not compose with, by name.
  if (spec.has_ladder()) TVLAB_RETURN_IF_ERROR(CrossLadder(spec, base, &grid));
  if (spec.has_scaling()) TVLAB_RETURN_IF_ERROR(FindScalingAxis(spec, &grid));
  if (spec.has_equal_budget()) {
    TVLAB_RETURN_IF_ERROR(MatchBudgets(spec.equal_budget(), seed_override(seeds[0]), resolve, &grid));
  }
  if (spec.has_lr_sweep()) TVLAB_RETURN_IF_ERROR(CrossLrSweep(spec, base, &grid));

  std::map<std::string, std::string> label_of_key;
  for (GridCell& cell : grid.cells) {
    if (!cell.valid()) continue;  // found invalid while matching budgets
    for (const std::optional<uint64_t>& seed : seeds) {
      auto resolved = resolve(cell, seed_override(seed));
      if (!resolved.ok()) {
        cell.invalid_reason = CellReason(resolved.status(), cell.label);
        cell.runs.clear();
        cell.budget.reset();
        break;
      }
      GridRun run;
      run.spec = *std::move(resolved);
      run.seed = run.spec.seed();
      run.key = FoundRunKey(grid.output_dir, run.spec);
      run.run_dir = absl::StrCat(grid.output_dir, "/runs/", run.key);
      auto [it, inserted] = label_of_key.emplace(run.key, cell.label);
      if (!inserted) {
        cell.invalid_reason = absl::StrCat("resolves to the same spec as cell '", it->second,
                                           "' (a value that changes nothing?); drop one of them");
        cell.runs.clear();
        cell.budget.reset();
        break;
      }
      cell.runs.push_back(std::move(run));
    }
  }
  if (grid.baseline >= 0 && !grid.cells[grid.baseline].valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "baseline cell '", grid.cells[grid.baseline].label, "' is invalid:\n",
        IndentLines(grid.cells[grid.baseline].invalid_reason, "  ")));
  }
  TVLAB_RETURN_IF_ERROR(ResolveHypotheses(&grid));
  TVLAB_RETURN_IF_ERROR(CheckReportProbes(grid));
  return grid;
}

std::string InvalidCellsReport(const ExpandedGrid& grid) {
  if (grid.num_invalid() == 0) return "";
  std::string out = absl::StrCat(grid.num_invalid(), " of ", grid.cells.size(),
                                 " cells are invalid:\n");
  for (const GridCell& c : grid.cells) {
    if (c.valid()) continue;
    absl::StrAppend(&out, "  ", c.label, ":\n", IndentLines(c.invalid_reason, "    "), "\n");
  }
  return out;
}

bool LooksLikeGridSpec(const std::string& text) {
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  struct Silent : google::protobuf::io::ErrorCollector {
    void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  } silent;
  google::protobuf::io::Tokenizer tokens(&input, &silent);
  tokens.set_comment_style(google::protobuf::io::Tokenizer::SH_COMMENT_STYLE);
  int depth = 0;
  std::string previous_identifier;
  bool previous_was_top_identifier = false;
  while (tokens.Next()) {
    const auto& t = tokens.current();
    using Tokenizer = google::protobuf::io::Tokenizer;
    if (t.type == Tokenizer::TYPE_SYMBOL) {
      if (previous_was_top_identifier && (t.text == ":" || t.text == "{" || t.text == "<")) {
        const bool in_grid = GridSpec::descriptor()->FindFieldByName(previous_identifier) != nullptr;
        const bool in_experiment =
            Experiment::descriptor()->FindFieldByName(previous_identifier) != nullptr;
        if (in_grid && !in_experiment) return true;
      }
      if (t.text == "{" || t.text == "<" || t.text == "[") ++depth;
      if (t.text == "}" || t.text == ">" || t.text == "]") --depth;
    }
    previous_was_top_identifier = depth == 0 && t.type == Tokenizer::TYPE_IDENTIFIER;
    if (previous_was_top_identifier) previous_identifier = t.text;
  }
  return false;
}

}  // namespace tvlab
