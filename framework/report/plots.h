#ifndef TVLAB_FRAMEWORK_REPORT_PLOTS_H_
#define TVLAB_FRAMEWORK_REPORT_PLOTS_H_

// The two grid plots, as standalone SVG documents: lines on shared axes
// (loss curves) and horizontal bars with error bars and the individual
// points (a metric per cell over seeds).

#include <string>
#include <vector>

namespace tvlab {

// The i-th colour of a 10-colour categorical palette (Tableau 10), cycling.
std::string PaletteColor(int i);

// Tick values covering [lo, hi] with a step of 1, 2 or 5 times a power of
// ten, about `target` of them; the first tick is <= lo and the last >= hi.
std::vector<double> NiceTicks(double lo, double hi, int target);
// Ticks for a log axis over [lo, hi] (lo > 0): 1, 2, 5 times powers of ten
// inside the range, plus the nearest such values just outside it.
std::vector<double> LogTicks(double lo, double hi);
// Short tick text: "0.05", "1", "200", "1.5k", "2M".
std::string TickLabel(double v);

struct LineSeries {
  std::string label;  // legend text; empty = not listed
  std::vector<double> x, y;
  std::string color = "#4e79a7";
  double width = 1.5;
  double opacity = 1;
  std::string dash;  // SVG stroke-dasharray, e.g. "6 3"; empty = solid
  bool markers = false;  // dots at the points instead of a line
};

struct LinePlotSpec {
  std::string title, x_label, y_label;
  bool log_y = false;  // points with y <= 0 are then left out
  bool log_x = false;  // the same for x
  std::vector<LineSeries> series;
};

std::string RenderLinePlot(const LinePlotSpec& plot);

struct Bar {
  std::string label;
  int n = 0;  // 0 = no result; `note` says why
  double mean = 0, std = 0;
  std::vector<double> points;  // one per seed, drawn as dots
  std::string color = "#4e79a7";
  double opacity = 0.85;
  bool baseline = false;  // bold label and a dashed reference line
  std::string note;
};

struct BarChartSpec {
  std::string title, value_label;
  std::vector<Bar> bars;  // drawn top to bottom
};

std::string RenderBarChart(const BarChartSpec& chart);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_PLOTS_H_
