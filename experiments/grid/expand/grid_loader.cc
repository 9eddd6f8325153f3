#include "experiments/spec/grid_loader.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "framework/core/status_macros.h"
#include "experiments/spec/grid_forms.h"
#include "experiments/spec/spec_loader.h"
#include "experiments/spec/spec_overrides.h"
#include "framework/data/load_task.h"
#include "experiments/spec/text_format_errors.h"
#include "framework/interfaces/plugin_kinds.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace tvlab {
namespace {

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

// One dimension of the product: a plain axis, or a zip group whose axes move
// together. Point i sets fields[j] = values[j][i] for every j.
struct Dimension {
  std::vector<std::string> fields;
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> values;  // [axis][point]
  size_t points() const { return values.empty() ? 0 : values[0].size(); }
};

absl::Status CheckAxis(const GridAxis& axis, const std::string& where) {
  if (axis.field().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": field is required, a path as --set takes it, e.g. field: \"model.num_heads\""));
  }
  if (axis.values().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " (", axis.field(), "): values is empty; list at least one, e.g. values: [\"4\", \"8\"]"));
  }
  std::set<std::string> seen;
  for (const std::string& v : axis.values()) {
    if (!seen.insert(v).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " (", axis.field(), "): value '", v, "' is listed twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Dimension>> Dimensions(const GridSpec& spec) {
  std::vector<Dimension> dims;
  for (int i = 0; i < spec.axis_size(); ++i) {
    const GridAxis& a = spec.axis(i);
    TVLAB_RETURN_IF_ERROR(CheckAxis(a, absl::StrCat("axis[", i, "]")));
    dims.push_back({{a.field()}, {a.label()}, {{a.values().begin(), a.values().end()}}});
  }
  for (int z = 0; z < spec.zip_size(); ++z) {
    const ZipAxes& zip = spec.zip(z);
    if (zip.axis().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("zip[", z, "] has no axis; give it two or more axis { field values }"));
    }
    Dimension d;
    for (int i = 0; i < zip.axis_size(); ++i) {
      const GridAxis& a = zip.axis(i);
      TVLAB_RETURN_IF_ERROR(CheckAxis(a, absl::StrCat("zip[", z, "].axis[", i, "]")));
      if (a.values_size() != zip.axis(0).values_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "zip[", z, "]: ", a.field(), " has ", a.values_size(), " values but ",
            zip.axis(0).field(), " has ", zip.axis(0).values_size(),
            "; zipped axes pair their values one to one, so give them equally many"));
      }
      d.fields.push_back(a.field());
      d.labels.push_back(a.label());
      d.values.push_back({a.values().begin(), a.values().end()});
    }
    dims.push_back(std::move(d));
  }
  std::map<std::string, int> field_count;
  for (const Dimension& d : dims)
    for (const std::string& f : d.fields)
      if (++field_count[f] == 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            "field ", f, " is varied by two axes; list all its values in one axis"));
      }
  return dims;
}

// Column names: the explicit label, else the field's last component, else
// (when two fields end alike) the field path without "model.".
void NameAxes(std::vector<Dimension>* dims) {
  std::map<std::string, int> last_count;
  auto last = [](const std::string& f) { return f.substr(f.find_last_of('.') + 1); };
  for (const Dimension& d : *dims)
    for (const std::string& f : d.fields) ++last_count[last(f)];
  for (Dimension& d : *dims) {
    for (size_t j = 0; j < d.fields.size(); ++j) {
      if (!d.labels[j].empty()) continue;
      const std::string& f = d.fields[j];
      std::string full = f.rfind("model.", 0) == 0 ? f.substr(6) : f;
      d.labels[j] = last_count[last(f)] > 1 ? full : last(f);
    }
  }
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

absl::StatusOr<int> FindBaseline(const GridSpec& spec, const std::vector<Dimension>& dims,
                                 const std::vector<GridCell>& cells) {
  if (spec.baseline().empty()) return -1;
  // Each selector names an axis by field path or label.
  std::vector<std::pair<size_t, std::string>> wanted;  // (column, value)
  for (const std::string& selector : spec.baseline()) {
    size_t eq = selector.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "baseline '", selector, "': expected field=value, e.g. \"model.position.plugin=sinusoidal\""));
    }
    std::string key = selector.substr(0, eq), value = selector.substr(eq + 1);
    size_t column = 0;
    bool found = false;
    std::vector<std::string> known;
    for (const Dimension& d : dims)
      for (size_t j = 0; j < d.fields.size(); ++j, ++column) {
        known.push_back(d.fields[j]);
        if (!found && (d.fields[j] == key || d.labels[j] == key)) {
          wanted.emplace_back(column, value);
          found = true;
        }
      }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat("baseline '", selector, "': no axis varies '", key,
                                                     "'; the axes are ", absl::StrJoin(known, ", ")));
    }
  }
  std::vector<int> matches;
  for (size_t c = 0; c < cells.size(); ++c) {
    bool all = true;
    for (const auto& [column, value] : wanted) all = all && cells[c].axis_values[column] == value;
    if (all) matches.push_back(static_cast<int>(c));
  }
  if (matches.size() != 1) {
    std::vector<std::string> labels;
    for (int m : matches) labels.push_back(cells[m].label);
    return absl::InvalidArgumentError(absl::StrCat(
        "baseline [", absl::StrJoin(spec.baseline(), ", "), "] selects ", matches.size(),
        " cells", matches.empty() ? "" : absl::StrCat(" (", absl::StrJoin(labels, "; "), ")"),
        "; it must select exactly one: give a value for more axes"));
  }
  return matches[0];
}

// The cells of the axis form: the product of the axes and zip groups,
// first axis slowest, and the baseline they select.
absl::Status AxisCells(const GridSpec& spec, ExpandedGrid* grid) {
  TVLAB_ASSIGN_OR_RETURN(std::vector<Dimension> dims, Dimensions(spec));
  NameAxes(&dims);
  for (const Dimension& d : dims) grid->axis_labels.insert(grid->axis_labels.end(), d.labels.begin(), d.labels.end());
  for (const Dimension& d : dims)
    for (const std::string& f : d.fields)
      if (f == "seed" && !spec.seeds().empty()) {
        return absl::InvalidArgumentError(
            "an axis varies 'seed' and the grid also lists seeds; list the seeds in `seeds` only");
      }
  size_t total = 1;
  for (const Dimension& d : dims) total *= d.points();
  for (size_t index = 0; index < total; ++index) {
    GridCell cell;
    cell.overrides.assign(spec.set().begin(), spec.set().end());
    std::vector<std::string> parts;
    // Mixed radix, last dimension fastest.
    std::vector<size_t> point(dims.size());
    for (size_t rest = index, k = dims.size(); k-- > 0;) {
      point[k] = rest % dims[k].points();
      rest /= dims[k].points();
    }
    for (size_t k = 0; k < dims.size(); ++k) {
      for (size_t j = 0; j < dims[k].fields.size(); ++j) {
        const std::string& value = dims[k].values[j][point[k]];
        cell.overrides.push_back(absl::StrCat(dims[k].fields[j], "=", value));
        cell.axis_values.push_back(value);
        parts.push_back(absl::StrCat(dims[k].labels[j], "=", value));
      }
    }
    cell.label = parts.empty() ? "base" : absl::StrJoin(parts, " ");
    grid->cells.push_back(std::move(cell));
  }
  TVLAB_ASSIGN_OR_RETURN(grid->baseline, FindBaseline(spec, dims, grid->cells));
  return absl::OkStatus();
}

}  // namespace

// Indents a multi-line reason under its cell.
std::string IndentLines(const std::string& text, const std::string& prefix) {
  return absl::StrCat(prefix, absl::StrJoin(absl::StrSplit(text, '\n'), absl::StrCat("\n", prefix)));
}

// The problems of a cell, one per line, without ResolveExperiment's
// "<source>: invalid spec:" heading and indentation.
std::string CellReason(const absl::Status& status, const std::string& source) {
  std::string text(status.message());
  const std::string heading = source + ": invalid spec:\n";
  if (text.rfind(heading, 0) == 0) text = text.substr(heading.size());
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n'))
    lines.emplace_back(absl::StripLeadingAsciiWhitespace(line));
  return absl::StrJoin(lines, "\n");
}


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

  if (spec.has_scaling()) TVLAB_RETURN_IF_ERROR(FindScalingAxis(spec, &grid));
  if (spec.has_equal_budget()) {
    TVLAB_RETURN_IF_ERROR(MatchBudgets(spec.equal_budget(), seed_override(seeds[0]), resolve, &grid));
  }

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
      run.key = RunKey(run.spec);
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

std::string Fnv1a64Hex(const std::string& bytes) {
  uint64_t hash = 14695981039346656037ull;  // offset basis
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;  // FNV prime
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

namespace {

// Fields added to the schema after run keys existed. At their default they
// are left out of the key, so run directories trained before the field
// existed keep their keys (a grid does not train them again, --report_only
// finds them); set to anything else, they change the key like any field.
// Add a field here when you add one to experiment.proto.
void ClearLaterFieldsAtDefault(Experiment* spec) {
  if (spec->has_train()) {
    TrainSpec* train = spec->mutable_train();
    if (train->divergence_loss() == 0) train->clear_divergence_loss();
    if (!train->fail_on_divergence()) train->clear_fail_on_divergence();
  }
  if (spec->has_eval() && spec->eval().context_length() == 0) spec->mutable_eval()->clear_context_length();
  // eval.context_lengths is a list: empty (its default) it is not written.
  if (spec->has_eval() && spec->eval().decode_speed_tokens() == 0)
    spec->mutable_eval()->clear_decode_speed_tokens();
  if (spec->has_runtime() && spec->runtime().attention() == "auto") spec->mutable_runtime()->clear_attention();
  if (spec->has_runtime() && spec->runtime().precision() == "fp32") spec->mutable_runtime()->clear_precision();
  // Task options: text tasks' `tokenizer` (bytes by default).
  const PluginKind& task = PluginKindById("task");
  auto options = UnpackPluginOptions(*spec, task);
  if (!options.ok()) return;
  const auto* tokenizer = (*options)->GetDescriptor()->FindFieldByName("tokenizer");
  const auto* reflection = (*options)->GetReflection();
  if (tokenizer == nullptr || !reflection->HasField(**options, tokenizer)) return;
  const google::protobuf::Message& value = reflection->GetMessage(**options, tokenizer);
  std::unique_ptr<google::protobuf::Message> defaults(value.New());
  if (!google::protobuf::util::MessageDifferencer::Equivalent(value, *defaults)) return;
  reflection->ClearField(options->get(), tokenizer);
  auto* any = static_cast<google::protobuf::Any*>(
      MutableParentIn(spec, task)->GetReflection()->MutableMessage(
          MutableParentIn(spec, task),
          MutableParentIn(spec, task)->GetDescriptor()->FindFieldByName(task.options_field)));
  any->PackFrom(**options);
}

}  // namespace

std::string RunKey(const Experiment& resolved) {
  Experiment unnamed = resolved;
  unnamed.clear_name();
  ClearLaterFieldsAtDefault(&unnamed);
  return Fnv1a64Hex(SpecToText(unnamed));
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
