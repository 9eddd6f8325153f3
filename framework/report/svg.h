#ifndef TVLAB_FRAMEWORK_REPORT_SVG_H_
#define TVLAB_FRAMEWORK_REPORT_SVG_H_

// A minimal SVG 1.1 writer: shapes and text in user units (pixels), origin
// top-left, y down. Enough for the grid plots; any browser shows the result.

#include <string>
#include <utility>
#include <vector>

namespace tvlab {

// Escapes &, <, >, " and ' for text and attribute values.
std::string EscapeXml(const std::string& text);

struct Stroke {
  std::string color = "#333333";
  double width = 1;
  double opacity = 1;
  std::string dash;  // "4 3" = 4 on, 3 off; empty = solid
};

class SvgCanvas {
 public:
  SvgCanvas(double width, double height);

  void Rect(double x, double y, double w, double h, const std::string& fill,
            const Stroke* stroke = nullptr, double opacity = 1);
  void Line(double x1, double y1, double x2, double y2, const Stroke& stroke);
  void Polyline(const std::vector<std::pair<double, double>>& points, const Stroke& stroke);
  void Circle(double cx, double cy, double r, const std::string& fill, double opacity = 1);
  enum class Anchor { kStart, kMiddle, kEnd };
  // `y` is the text's baseline; `rotate` turns it (degrees) about (x, y).
  void Text(double x, double y, const std::string& text, double size = 12,
            Anchor anchor = Anchor::kStart, const std::string& fill = "#222222", bool bold = false,
            double rotate = 0);

  // The whole document, with a white background.
  std::string ToString() const;

 private:
  double width_, height_;
  std::string body_;
};

// Width estimate of `text` at `size` in a sans-serif font (for layout).
double TextWidth(const std::string& text, double size);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_SVG_H_
