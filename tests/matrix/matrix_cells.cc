#include "tests/matrix/matrix_cells.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_join.h"
#include "framework/spec/spec_loader.h"
#include "google/protobuf/text_format.h"

namespace tvlab {

namespace {

// Splits "axis value fragment" at the first two runs of blanks.
bool SplitRow(const std::string& line, std::string* axis, std::string* value,
              std::string* fragment) {
  std::istringstream in(line);
  if (!(in >> *axis >> *value)) return false;
  std::getline(in, *fragment);
  const size_t first = fragment->find_first_not_of(" \t");
  *fragment = first == std::string::npos ? "" : fragment->substr(first);
  return !fragment->empty();
}

absl::Status MergeFragment(const std::string& fragment, Experiment* spec) {
  if (!google::protobuf::TextFormat::MergeFromString(fragment, spec))
    return absl::InvalidArgumentError(absl::StrCat(
        "the fragment \"", fragment, "\" is not text format of tvlab.Experiment (is the field "
        "or plugin option message in this build?)"));
  return absl::OkStatus();
}

Axis* FindOrAddAxis(const std::string& name, std::vector<Axis>* axes) {
  for (Axis& a : *axes)
    if (a.name == name) return &a;
  axes->push_back({name, {}});
  return &axes->back();
}

}  // namespace

absl::StatusOr<std::vector<Axis>> ParseAxesTable(const std::string& text,
                                                 const std::string& filename) {
  std::vector<Axis> axes;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = absl::StrCat(filename, ":", number, ": ");
    std::string axis, value, fragment;
    if (!SplitRow(line, &axis, &value, &fragment))
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expected \"axis value fragment\", got \"", line, "\""));
    Experiment scratch;
    if (absl::Status s = MergeFragment(fragment, &scratch); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(where, s.message()));
    Axis* a = FindOrAddAxis(axis, &axes);
    for (const AxisValue& v : a->values)
      if (v.name == value)
        return absl::InvalidArgumentError(
            absl::StrCat(where, "axis ", axis, " already has a value named ", value));
    a->values.push_back({value, fragment, std::move(scratch)});
  }
  if (axes.empty()) return absl::InvalidArgumentError(absl::StrCat(filename, ": no axes"));
  return axes;
}

namespace {

Experiment CellSpec(const Experiment& base, const std::vector<Axis>& axes, const Cell& cell) {
  Experiment spec = base;
  for (size_t i = 0; i < axes.size(); ++i) spec.MergeFrom(axes[i].values[cell[i]].parsed);
  return spec;
}

std::string CellName(const std::vector<Axis>& axes, const Cell& cell) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < axes.size(); ++i) parts.push_back(axes[i].values[cell[i]].name);
  return absl::StrJoin(parts, "_");
}

}  // namespace

absl::StatusOr<Matrix> BuildMatrix(const Experiment& base, const std::vector<Axis>& axes) {
  Matrix matrix;
  matrix.base = base;
  matrix.axes = axes;
  std::vector<int> sizes;
  for (const Axis& a : axes) sizes.push_back(static_cast<int>(a.values.size()));
  auto legal = [&](const Cell& cell) {
    std::shared_ptr<const Task> task;
    const std::string name = CellName(axes, cell);
    absl::StatusOr<Experiment> resolved =
        ResolveExperiment(CellSpec(base, axes, cell), {}, name, "matrix", &task);
    if (!resolved.ok()) {
      Matrix::Refusal& r =
          matrix.refusals[absl::StrReplaceAll(resolved.status().message(), {{name, "<cell>"}})];
      if (r.cells++ == 0) r.first_cell = name;
      return false;
    }
    return true;
  };
  const char* exhaustive = std::getenv("TVLAB_MATRIX_EXHAUSTIVE");
  CoverOptions options;
  if (exhaustive != nullptr && std::string(exhaustive) == "1") options.max_changes = -1;
  matrix.array = PairwiseCover(sizes, legal, options);
  for (const Cell& cell : matrix.array.cells) {
    MatrixCell c;
    c.name = CellName(axes, cell);
    absl::StatusOr<Experiment> resolved =
        ResolveExperiment(CellSpec(base, axes, cell), {}, c.name, "matrix", &c.task);
    if (!resolved.ok()) return resolved.status();  // legal a moment ago
    c.spec = *resolved;
    matrix.cells.push_back(std::move(c));
  }
  return matrix;
}

bool CellIsLegal(const Matrix& matrix, const Cell& cell) {
  return ResolveExperiment(CellSpec(matrix.base, matrix.axes, cell), {},
                           CellName(matrix.axes, cell), "matrix")
      .ok();
}

namespace {

std::string ReadRunfile(const std::string& path) {
  const std::string full = std::string(std::getenv("TEST_SRCDIR")) + "/tvlab/" + path;
  std::ifstream in(full);
  if (!in) {
    std::cerr << "cannot read " << full << "\n";
    std::abort();
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Matrix LoadTheMatrix() {
  auto fail = [](const absl::Status& s) {
    std::cerr << "combination matrix: " << s.message() << "\n";
    std::abort();
  };
  absl::StatusOr<Experiment> base =
      ParseSpecText(ReadRunfile("tests/matrix/base.pbtxt"), "tests/matrix/base.pbtxt");
  if (!base.ok()) fail(base.status());
  absl::StatusOr<std::vector<Axis>> axes =
      ParseAxesTable(ReadRunfile("tests/matrix/axes.txt"), "tests/matrix/axes.txt");
  if (!axes.ok()) fail(axes.status());
  absl::StatusOr<Matrix> matrix = BuildMatrix(*base, *axes);
  if (!matrix.ok()) fail(matrix.status());
  return *std::move(matrix);
}

}  // namespace

const Matrix& TheMatrix() {
  static const Matrix* matrix = new Matrix(LoadTheMatrix());
  return *matrix;
}

}  // namespace tvlab
