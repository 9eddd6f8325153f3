// CoordCheckSvg (coord_check.h): the coordinate check as a plot, written
// without a plotting library. One panel per parametrisation side by side,
// sharing a log-scale RMS axis so the two can be compared; width on a log2
// axis; one coloured line per activation, with a legend.

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/mup_coord/coord_check.h"

namespace tvlab {
namespace {

constexpr double kPanelWidth = 420, kPanelHeight = 320, kMargin = 60;
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Axes {
  double x_lo, x_hi, y_lo, y_hi;  // log2(width), log10(rms)
  double X(double width, double left) const {
    return left + kMargin + (std::log2(width) - x_lo) / std::max(1e-9, x_hi - x_lo) * (kPanelWidth - 2 * kMargin);
  }
  double Y(double rms) const {
    return kPanelHeight - kMargin -
           (std::log10(rms) - y_lo) / std::max(1e-9, y_hi - y_lo) * (kPanelHeight - 2 * kMargin);
  }
};

Axes AxesOf(const std::vector<CoordPoint>& points) {
  Axes a{1e9, -1e9, 1e9, -1e9};
  for (const CoordPoint& p : points) {
    if (p.rms <= 0) continue;
    a.x_lo = std::min(a.x_lo, std::log2(static_cast<double>(p.width)));
    a.x_hi = std::max(a.x_hi, std::log2(static_cast<double>(p.width)));
    a.y_lo = std::min(a.y_lo, std::floor(std::log10(p.rms)));
    a.y_hi = std::max(a.y_hi, std::ceil(std::log10(p.rms)));
  }
  if (a.y_hi <= a.y_lo) a.y_hi = a.y_lo + 1;
  return a;
}

// The frame, ticks and title of the panel at `left`.
std::string Frame(const Axes& a, double left, const std::string& title, const std::set<int64_t>& widths) {
  std::string svg = absl::StrFormat(
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n"
      "<text x=\"%.1f\" y=\"30\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n"
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">width (model.d_model)</text>\n",
      left + kMargin, kMargin, kPanelWidth - 2 * kMargin, kPanelHeight - 2 * kMargin, left + kPanelWidth / 2,
      title, left + kPanelWidth / 2, kPanelHeight - 15);
  for (int64_t w : widths)
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%d"
                                          "</text>\n", a.X(static_cast<double>(w), left), kPanelHeight - kMargin + 16, w));
  for (double e = a.y_lo; e <= a.y_hi + 1e-9; e += 1)
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">1e%d"
                                          "</text>\n", left + kMargin - 4, a.Y(std::pow(10.0, e)) + 4,
                                          static_cast<int>(e)));
  return svg;
}

}  // namespace

std::string CoordCheckSvg(const std::vector<CoordPoint>& points, int64_t steps) {
  std::vector<std::string> parametrisations, activations;
  std::set<int64_t> widths;
  for (const CoordPoint& p : points) {
    if (std::find(parametrisations.begin(), parametrisations.end(), p.parametrisation) == parametrisations.end())
      parametrisations.push_back(p.parametrisation);
    if (std::find(activations.begin(), activations.end(), p.activation) == activations.end())
      activations.push_back(p.activation);
    widths.insert(p.width);
  }
  const Axes axes = AxesOf(points);
  const double total_width = kPanelWidth * static_cast<double>(std::max<size_t>(1, parametrisations.size())) + 200;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      total_width, kPanelHeight);
  for (size_t i = 0; i < parametrisations.size(); ++i) {
    const double left = kPanelWidth * static_cast<double>(i);
    const std::string& name = parametrisations[i];
    absl::StrAppend(&svg, Frame(axes, left, absl::StrCat("model.init ", name == "default" ? "default (SP)" : name,
                                                         ": activation RMS after ", steps, " steps"), widths));
    for (size_t j = 0; j < activations.size(); ++j) {
      std::string line;
      for (const CoordPoint& p : points)
        if (p.parametrisation == name && p.activation == activations[j] && p.rms > 0)
          absl::StrAppend(&line, absl::StrFormat("%.1f,%.1f ", axes.X(static_cast<double>(p.width), left), axes.Y(p.rms)));
      absl::StrAppend(&svg, absl::StrFormat("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n",
                                            kColours[j % 10], line));
    }
  }
  const double legend = kPanelWidth * static_cast<double>(parametrisations.size()) + 10;
  for (size_t j = 0; j < activations.size(); ++j)
    absl::StrAppend(&svg, absl::StrFormat("<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                                          "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">%s</text>\n",
                                          legend, kMargin + 18.0 * j, kColours[j % 10], legend + 18,
                                          kMargin + 18.0 * j + 11, activations[j]));
  return svg + "</svg>\n";
}

}  // namespace tvlab
