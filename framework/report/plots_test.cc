// Axis ticks, SVG escaping and that data land where the axes say.

#include "framework/report/plots.h"

#include <regex>

#include "framework/report/svg.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Ticks, NiceStepsCoverTheRange) {
  EXPECT_THAT(NiceTicks(0, 1000, 5), ElementsAre(0, 200, 400, 600, 800, 1000));
  EXPECT_THAT(NiceTicks(0, 0.93, 5), ElementsAre(0, 0.2, 0.4, 0.6, 0.8, 1));
  EXPECT_THAT(NiceTicks(0.31, 0.97, 6), ElementsAre(0.2, 0.4, 0.6, 0.8, 1));
  EXPECT_THAT(NiceTicks(0.31, 0.97, 10), ElementsAre(0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1));
  EXPECT_THAT(NiceTicks(5, 5, 4).size(), ::testing::Ge(2u));  // a flat range still gets an axis
}

TEST(Ticks, LogTicksAreOneTwoFive) {
  EXPECT_THAT(LogTicks(0.06, 2.3), ElementsAre(0.05, 0.1, 0.2, 0.5, 1, 2, 5));
  // Narrower than 1-2-5 can label: every digit, then linear steps.
  EXPECT_THAT(LogTicks(0.25, 0.9), ElementsAre(0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9));
  EXPECT_THAT(LogTicks(2.2, 2.45), ElementsAre(2.2, 2.25, 2.3, 2.35, 2.4, 2.45));
}

TEST(Ticks, Labels) {
  EXPECT_EQ(TickLabel(0.05), "0.05");
  EXPECT_EQ(TickLabel(200), "200");
  EXPECT_EQ(TickLabel(15000), "15k");
  EXPECT_EQ(TickLabel(2e6), "2M");
}

TEST(Svg, TextIsEscaped) {
  EXPECT_EQ(EscapeXml("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
  SvgCanvas svg(10, 10);
  svg.Text(1, 2, "d_model<64 & h=4");
  EXPECT_THAT(svg.ToString(), HasSubstr(">d_model&lt;64 &amp; h=4</text>"));
  EXPECT_THAT(svg.ToString(), HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
}

// The pixel coordinates of the first polyline in `svg`.
std::vector<std::pair<double, double>> FirstPolyline(const std::string& svg) {
  std::smatch m;
  std::vector<std::pair<double, double>> points;
  if (!std::regex_search(svg, m, std::regex("<polyline points=\"([^\"]*)\""))) return points;
  std::string list = m[1];
  std::regex pair("([-0-9.]+),([-0-9.]+)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), pair); it != std::sregex_iterator(); ++it)
    points.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  return points;
}

TEST(LinePlot, PointsMapOntoTheAxes) {
  LinePlotSpec plot;
  plot.title = "t";
  LineSeries s;
  s.label = "cell";
  s.x = {0, 500, 1000};
  s.y = {0, 0.5, 1};  // ticks 0..1, so the line runs corner to corner
  plot.series.push_back(s);
  std::vector<std::pair<double, double>> p = FirstPolyline(RenderLinePlot(plot));
  ASSERT_EQ(p.size(), 3u);
  EXPECT_LT(p[0].first, p[2].first);
  EXPECT_GT(p[0].second, p[2].second);  // y grows downwards
  EXPECT_NEAR(p[1].first, (p[0].first + p[2].first) / 2, 0.02);
  EXPECT_NEAR(p[1].second, (p[0].second + p[2].second) / 2, 0.02);
}

TEST(LinePlot, LogAxisSpacesDecadesEqually) {
  LinePlotSpec plot;
  plot.log_y = true;
  LineSeries s;
  s.x = {0, 1, 2, 3};
  s.y = {0.1, 1, 10, 0};  // the zero cannot be drawn on a log axis: left out
  plot.series.push_back(s);
  std::vector<std::pair<double, double>> p = FirstPolyline(RenderLinePlot(plot));
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NEAR(p[0].second - p[1].second, p[1].second - p[2].second, 0.02);
}

TEST(BarChart, BarLengthAndWhiskersFollowMeanAndStd) {
  BarChartSpec chart;
  chart.bars = {{"a", 3, 0.5, 0.1, {0.4, 0.5, 0.6}}, {"b", 3, 1.0, 0.0, {1, 1, 1}}, {"c", 0}};
  chart.bars[2].note = "failed";
  std::string svg = RenderBarChart(chart);
  std::regex rect("<rect x=\"([0-9.]+)\" y=\"[0-9.]+\" width=\"([0-9.]+)\" height=\"[0-9.]+\" fill=\"#4e79a7\"");
  std::vector<double> widths;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it)
    widths.push_back(std::stod((*it)[2]));
  ASSERT_EQ(widths.size(), 2u);
  EXPECT_NEAR(widths[1] / widths[0], 2.0, 1e-3);
  EXPECT_THAT(svg, HasSubstr("0.500 ± 0.100 (n=3)"));
  EXPECT_THAT(svg, HasSubstr(">failed</text>"));
  // Three seed dots per finished bar.
  size_t dots = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++dots;
  EXPECT_EQ(dots, 6u);
}

}  // namespace
}  // namespace tvlab
