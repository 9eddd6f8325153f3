#ifndef TVLAB_TESTS_MATRIX_MATRIX_CELLS_H_
#define TVLAB_TESTS_MATRIX_MATRIX_CELLS_H_

// The combination matrix's cells: the axes table (axes.txt: "axis value
// fragment" lines), the base spec (base.pbtxt), and the pairwise covering
// array of the axes under validation (covering_array.h). A cell's spec is
// the base with its values' fragments merged in, resolved and validated by
// ResolveExperiment exactly as a run's spec; a spec validation refuses is an
// illegal cell, skipped and counted.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/interfaces/task.h"
#include "framework/schema/experiment.pb.h"
#include "tests/matrix/covering_array.h"

namespace tvlab {

struct AxisValue {
  std::string name;      // e.g. "rope"
  std::string fragment;  // text format of Experiment, e.g. model { position { plugin: "rope" } }
  // The fragment parsed once: a cell merges it with Experiment::MergeFrom,
  // which for proto2 is what TextFormat's merge of the text does (set
  // fields overwrite, messages merge, repeated fields append) without
  // parsing text in each of the covering array's million oracle calls.
  Experiment parsed;
};

struct Axis {
  std::string name;  // e.g. "position"
  std::vector<AxisValue> values;
};

// Parses the table; errors name `filename`, the line and what is wrong (a
// line without a fragment, a fragment that is not text format of
// Experiment, a value named twice).
absl::StatusOr<std::vector<Axis>> ParseAxesTable(const std::string& text,
                                                 const std::string& filename);

struct MatrixCell {
  std::string name;  // the values joined by "_" (a test name)
  Experiment spec;   // resolved and validated
  std::shared_ptr<const Task> task;
};

struct Matrix {
  Experiment base;
  std::vector<Axis> axes;
  std::vector<MatrixCell> cells;
  CoveringArray array;
  // Validation's messages for the refused cells, each distinct message once
  // (the cell's name in it replaced by "<cell>"), with how many cells it
  // refused and the first of them. A million refused cells stay a few
  // dozen lines of log.
  struct Refusal {
    int64_t cells = 0;
    std::string first_cell;
  };
  std::map<std::string, Refusal> refusals;
};

// The matrix of `axes` (as ParseAxesTable gives them: fragments parsed)
// over `base`, with the covering array's bounded search (covering_array.h),
// or its exhaustive one when the environment has TVLAB_MATRIX_EXHAUSTIVE=1
// (minutes: run it by hand after changing a validation rule the axes meet,
// `bazel test //tests/matrix:combination_matrix_test
// --test_env=TVLAB_MATRIX_EXHAUSTIVE=1`).
absl::StatusOr<Matrix> BuildMatrix(const Experiment& base, const std::vector<Axis>& axes);

// Whether validation accepts `cell` of the matrix (the covering array's
// oracle).
bool CellIsLegal(const Matrix& matrix, const Cell& cell);

// The matrix of the runfiles tests/matrix/base.pbtxt and axes.txt, built
// once per process; aborts with the error if the files are broken.
const Matrix& TheMatrix();

}  // namespace tvlab

#endif  // TVLAB_TESTS_MATRIX_MATRIX_CELLS_H_
