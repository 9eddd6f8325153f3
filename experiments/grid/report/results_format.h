#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_FORMAT_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_FORMAT_H_

// How the results files write values and text: numbers exactly (CSV) or to
// three significant digits (the table's cost columns), and free text (errors,
// labels) made safe for a CSV field or a Markdown table cell.

#include <string>

namespace tvlab {

// "%.9g": every float32 metric round-trips.
std::string FormatExact(double value);
// The shortest "%.<p>g" (p <= 17) that reads back as this very double, as
// Python's repr: for values computed in double (the probes). "nan", "inf",
// "-inf" for the rest.
std::string FormatRoundTrip(double value);
// "1.23M", "45.6k", "789": three significant digits for cost columns.
std::string FormatSi(double value);

// Quoted (with "" for ") when it holds a comma, quote or line break.
std::string CsvField(const std::string& text);
// A run directory relative to the results directory (a CSV's run_dir
// column): the same wherever the grid's folder and output directory are
// checked out, as long as they stay put relative to each other; `path`
// itself when no relative path exists.
std::string RelativeTo(const std::string& path, const std::string& base);
// Lines joined with "; ": a CSV row stays one line so grep and `column` work.
std::string OneLine(const std::string& text);
// '|' escaped and line breaks as spaces.
std::string MdCell(const std::string& text);
// The first line, cut to 140 characters.
std::string FirstLine(const std::string& text);
// The line of a failure that says why: the run binary's "error: ..." line
// if there is one, else the first line.
std::string FailureSummary(const std::string& error);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_FORMAT_H_
