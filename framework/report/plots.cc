#include "framework/report/plots.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "framework/report/svg.h"

namespace tvlab {
namespace {

constexpr double kTitleSize = 15, kLabelSize = 12, kTickSize = 11;
const Stroke kAxisStroke{"#444444", 1, 1, ""};
const Stroke kGridStroke{"#dddddd", 1, 1, ""};

// Maps data values to pixels along one axis.
struct Scale {
  double lo, hi, pixel_lo, pixel_hi;
  bool log = false;
  double operator()(double v) const {
    double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi;
    // Halves, so that a range wider than a double (-1.7e308 .. 1.7e308) maps
    // too; halving is exact, so every other plot has the same pixels.
    double t = ((log ? std::log10(v) : v) / 2 - a / 2) / (b / 2 - a / 2);
    return pixel_lo + t * (pixel_hi - pixel_lo);
  }
};

}  // namespace

std::string PaletteColor(int i) {
  static const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kColors[((i % 10) + 10) % 10];
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + (lo == 0 ? 1 : std::abs(lo));
  if (!std::isfinite(hi - lo)) {  // e.g. -1.7e308 .. 1.7e308: the ends (and 0) only
    if (lo < 0 && hi > 0) return {lo, 0.0, hi};
    return {lo, hi};
  }
  double raw = (hi - lo) / std::max(target, 1);
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (int i = 0;; ++i) {
    double v = first + i * step;
    if (std::abs(v) < step * 1e-9) v = 0;  // no "-0"
    v = std::stod(absl::StrFormat("%.12g", v));  // 0.6, not 0.6000000000000001
    ticks.push_back(v);
    if (v >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::vector<double> LogTicks(double lo, double hi) {
  // 1-2-5 per decade; a range narrower than that gets every digit, and a
  // range within one digit step gets linear nice ticks.
  for (const std::vector<double>& mantissas :
       {std::vector<double>{1, 2, 5}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    std::vector<double> all;
    for (int e = static_cast<int>(std::floor(std::log10(lo))) - 1;
         e <= static_cast<int>(std::ceil(std::log10(hi))); ++e) {
      for (double m : mantissas) all.push_back(std::stod(absl::StrFormat("%.12g", m * std::pow(10.0, e))));
    }
    // From the largest candidate <= lo to the smallest >= hi.
    size_t first = 0, last = all.size() - 1;
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i] <= lo * (1 + 1e-9)) first = i;
      if (all[all.size() - 1 - i] >= hi * (1 - 1e-9)) last = all.size() - 1 - i;
    }
    std::vector<double> ticks(all.begin() + first, all.begin() + last + 1);
    int inside_count = 0;
    for (double t : ticks) inside_count += t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9);
    if (inside_count >= 3) return ticks;
  }
  std::vector<double> ticks;
  for (double t : NiceTicks(lo, hi, 5))
    if (t > 0) ticks.push_back(t);
  return ticks;
}

std::string TickLabel(double v) {
  double a = std::abs(v);
  if (a >= 1e6) return absl::StrFormat("%gM", v / 1e6);
  if (a >= 1e4) return absl::StrFormat("%gk", v / 1e3);
  return absl::StrFormat("%g", std::abs(v) < 1e-12 ? 0.0 : v);
}

std::string RenderLinePlot(const LinePlotSpec& plot) {
  // Data ranges.
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const LineSeries& s : plot.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i]) || (plot.log_y && s.y[i] <= 0) || (plot.log_x && s.x[i] <= 0)) continue;
      x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]), y_hi = std::max(y_hi, s.y[i]);
    }
  }
  const bool empty = !(x_hi >= x_lo);
  if (empty) x_lo = plot.log_x ? 0.1 : 0, x_hi = 1, y_lo = plot.log_y ? 0.1 : 0, y_hi = 1;

  double legend_width = 0;
  for (const LineSeries& s : plot.series)
    if (!s.label.empty()) legend_width = std::max(legend_width, 34 + TextWidth(s.label, kTickSize));
  const double left = 70, top = 44, plot_w = 560, plot_h = 340, bottom = 56;
  const double width = left + plot_w + (legend_width > 0 ? legend_width + 36 : 24);
  const double height = top + plot_h + bottom;
  SvgCanvas svg(width, height);
  svg.Text(width / 2, 26, plot.title, kTitleSize, SvgCanvas::Anchor::kMiddle, "#222222", true);

  std::vector<double> x_ticks = plot.log_x ? LogTicks(x_lo, x_hi) : NiceTicks(x_lo, x_hi, 6);
  std::vector<double> y_ticks = plot.log_y ? LogTicks(y_lo, y_hi) : NiceTicks(y_lo, y_hi, 6);
  Scale x{x_ticks.front(), x_ticks.back(), left, left + plot_w, plot.log_x};
  Scale y{y_ticks.front(), y_ticks.back(), top + plot_h, top, plot.log_y};

  for (double t : x_ticks) {
    svg.Line(x(t), top, x(t), top + plot_h, kGridStroke);
    svg.Text(x(t), top + plot_h + 16, TickLabel(t), kTickSize, SvgCanvas::Anchor::kMiddle);
  }
  for (double t : y_ticks) {
    svg.Line(left, y(t), left + plot_w, y(t), kGridStroke);
    svg.Text(left - 6, y(t) + 4, TickLabel(t), kTickSize, SvgCanvas::Anchor::kEnd);
  }
  svg.Rect(left, top, plot_w, plot_h, "none", &kAxisStroke);
  svg.Text(left + plot_w / 2, top + plot_h + 40, plot.x_label + (plot.log_x ? " (log scale)" : ""), kLabelSize,
           SvgCanvas::Anchor::kMiddle);
  svg.Text(18, top + plot_h / 2, plot.y_label + (plot.log_y ? " (log scale)" : ""), kLabelSize,
           SvgCanvas::Anchor::kMiddle, "#222222", false, -90);
  if (empty) svg.Text(left + plot_w / 2, top + plot_h / 2, "no data", kLabelSize, SvgCanvas::Anchor::kMiddle, "#888888");

  // Faint lines first so the emphasised ones stay on top.
  std::vector<const LineSeries*> order;
  for (const LineSeries& s : plot.series) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(),
                   [](const LineSeries* a, const LineSeries* b) { return a->opacity < b->opacity; });
  for (const LineSeries* s : order) {
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < s->x.size() && i < s->y.size(); ++i) {
      if (!std::isfinite(s->y[i]) || (plot.log_y && s->y[i] <= 0) || (plot.log_x && s->x[i] <= 0)) continue;
      points.emplace_back(x(s->x[i]), y(s->y[i]));
    }
    if (s->markers) {
      for (const auto& [px, py] : points) svg.Circle(px, py, 3.5, s->color, s->opacity);
    } else {
      svg.Polyline(points, Stroke{s->color, s->width, s->opacity, s->dash});
    }
  }

  double legend_y = top + 8;
  for (const LineSeries& s : plot.series) {
    if (s.label.empty()) continue;
    double lx = left + plot_w + 20;
    svg.Line(lx, legend_y, lx + 24, legend_y, Stroke{s.color, s.dash.empty() ? 3.0 : 2.2, 1, s.dash});
    svg.Text(lx + 30, legend_y + 4, s.label, kTickSize);
    legend_y += 18;
  }
  return svg.ToString();
}

std::string RenderBarChart(const BarChartSpec& chart) {
  double lo = 0, hi = 0;
  bool any = false;
  for (const Bar& b : chart.bars) {
    if (b.n == 0) continue;
    any = true;
    lo = std::min({lo, b.mean - b.std}), hi = std::max(hi, b.mean + b.std);
    for (double p : b.points) lo = std::min(lo, p), hi = std::max(hi, p);
  }
  if (!any || hi <= lo) hi = lo + 1;
  std::vector<double> ticks = NiceTicks(lo, hi, 5);

  double label_width = 0;
  for (const Bar& b : chart.bars) label_width = std::max(label_width, TextWidth(b.label, kLabelSize));
  const double row = 30, top = 48, left = label_width + 24, plot_w = 420, value_w = 150;
  const double plot_h = row * std::max<size_t>(chart.bars.size(), 1);
  const double width = left + plot_w + value_w, height = top + plot_h + 52;
  SvgCanvas svg(width, height);
  svg.Text(width / 2, 26, chart.title, kTitleSize, SvgCanvas::Anchor::kMiddle, "#222222", true);
  Scale x{ticks.front(), ticks.back(), left, left + plot_w};
  for (double t : ticks) {
    svg.Line(x(t), top, x(t), top + plot_h, kGridStroke);
    svg.Text(x(t), top + plot_h + 16, TickLabel(t), kTickSize, SvgCanvas::Anchor::kMiddle);
  }
  svg.Text(left + plot_w / 2, top + plot_h + 40, chart.value_label, kLabelSize, SvgCanvas::Anchor::kMiddle);

  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const Bar& b = chart.bars[i];
    const double mid = top + row * (i + 0.5);
    svg.Text(left - 8, mid + 4, b.label, kLabelSize, SvgCanvas::Anchor::kEnd, "#222222", b.baseline);
    if (b.n == 0) {
      svg.Text(left + 6, mid + 4, b.note.empty() ? "no result" : b.note, kTickSize,
               SvgCanvas::Anchor::kStart, "#888888");
      continue;
    }
    const double x0 = x(std::max(0.0, ticks.front()));
    svg.Rect(std::min(x0, x(b.mean)), mid - row * 0.32, std::abs(x(b.mean) - x0), row * 0.64, b.color,
             nullptr, b.opacity);
    const Stroke whisker{"#222222", 1.3, 1, ""};
    if (b.n > 1) {
      svg.Line(x(b.mean - b.std), mid, x(b.mean + b.std), mid, whisker);
      svg.Line(x(b.mean - b.std), mid - 6, x(b.mean - b.std), mid + 6, whisker);
      svg.Line(x(b.mean + b.std), mid - 6, x(b.mean + b.std), mid + 6, whisker);
    }
    for (double p : b.points) svg.Circle(x(p), mid, 2.6, "#222222", 0.55);
    std::string value = b.n > 1 ? absl::StrFormat("%.3f ± %.3f (n=%d)", b.mean, b.std, b.n)
                                : absl::StrFormat("%.3f (n=1)", b.mean);
    if (!b.note.empty()) value += " " + b.note;
    svg.Text(left + plot_w + 8, mid + 4, value, kTickSize);
  }
  for (const Bar& b : chart.bars) {
    if (!b.baseline || b.n == 0) continue;
    svg.Line(x(b.mean), top - 4, x(b.mean), top + plot_h, Stroke{"#222222", 1, 0.8, "5 4"});
    svg.Text(x(b.mean), top - 8, "baseline", kTickSize, SvgCanvas::Anchor::kMiddle, "#444444");
  }
  const Stroke axis = kAxisStroke;
  svg.Line(left, top + plot_h, left + plot_w, top + plot_h, axis);
  svg.Line(x(std::max(0.0, ticks.front())), top, x(std::max(0.0, ticks.front())), top + plot_h, axis);
  return svg.ToString();
}

}  // namespace tvlab
