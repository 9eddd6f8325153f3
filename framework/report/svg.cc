#include "framework/report/svg.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tvlab {
namespace {

std::string Num(double v) { return absl::StrFormat("%.2f", v); }

std::string StrokeAttributes(const Stroke& s) {
  std::string out = absl::StrCat(" stroke=\"", EscapeXml(s.color), "\" stroke-width=\"", Num(s.width), "\"");
  if (s.opacity < 1) absl::StrAppend(&out, " stroke-opacity=\"", Num(s.opacity), "\"");
  if (!s.dash.empty()) absl::StrAppend(&out, " stroke-dasharray=\"", EscapeXml(s.dash), "\"");
  return out;
}

}  // namespace

std::string EscapeXml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

SvgCanvas::SvgCanvas(double width, double height) : width_(width), height_(height) {}

void SvgCanvas::Rect(double x, double y, double w, double h, const std::string& fill,
                     const Stroke* stroke, double opacity) {
  absl::StrAppend(&body_, "<rect x=\"", Num(x), "\" y=\"", Num(y), "\" width=\"", Num(w),
                  "\" height=\"", Num(h), "\" fill=\"", EscapeXml(fill), "\"");
  if (opacity < 1) absl::StrAppend(&body_, " fill-opacity=\"", Num(opacity), "\"");
  if (stroke != nullptr) absl::StrAppend(&body_, StrokeAttributes(*stroke));
  absl::StrAppend(&body_, "/>\n");
}

void SvgCanvas::Line(double x1, double y1, double x2, double y2, const Stroke& stroke) {
  absl::StrAppend(&body_, "<line x1=\"", Num(x1), "\" y1=\"", Num(y1), "\" x2=\"", Num(x2),
                  "\" y2=\"", Num(y2), "\"", StrokeAttributes(stroke), "/>\n");
}

void SvgCanvas::Polyline(const std::vector<std::pair<double, double>>& points, const Stroke& stroke) {
  if (points.empty()) return;
  std::string list;
  for (const auto& [x, y] : points) absl::StrAppend(&list, list.empty() ? "" : " ", Num(x), ",", Num(y));
  absl::StrAppend(&body_, "<polyline points=\"", list, "\" fill=\"none\"", StrokeAttributes(stroke),
                  " stroke-linejoin=\"round\"/>\n");
}

void SvgCanvas::Circle(double cx, double cy, double r, const std::string& fill, double opacity) {
  absl::StrAppend(&body_, "<circle cx=\"", Num(cx), "\" cy=\"", Num(cy), "\" r=\"", Num(r),
                  "\" fill=\"", EscapeXml(fill), "\"");
  if (opacity < 1) absl::StrAppend(&body_, " fill-opacity=\"", Num(opacity), "\"");
  absl::StrAppend(&body_, "/>\n");
}

void SvgCanvas::Text(double x, double y, const std::string& text, double size, Anchor anchor,
                     const std::string& fill, bool bold, double rotate) {
  const char* anchors[] = {"start", "middle", "end"};
  absl::StrAppend(&body_, "<text x=\"", Num(x), "\" y=\"", Num(y), "\" font-size=\"", Num(size),
                  "\" text-anchor=\"", anchors[static_cast<int>(anchor)], "\" fill=\"", EscapeXml(fill), "\"");
  if (bold) absl::StrAppend(&body_, " font-weight=\"bold\"");
  if (rotate != 0) absl::StrAppend(&body_, " transform=\"rotate(", Num(rotate), " ", Num(x), " ", Num(y), ")\"");
  absl::StrAppend(&body_, ">", EscapeXml(text), "</text>\n");
}

std::string SvgCanvas::ToString() const {
  return absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", Num(width_), "\" height=\"", Num(height_),
      "\" viewBox=\"0 0 ", Num(width_), " ", Num(height_),
      "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
      "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", body_, "</svg>\n");
}

double TextWidth(const std::string& text, double size) {
  // Average advance of a proportional sans-serif font: ~0.6 em; multi-byte
  // UTF-8 sequences count once.
  double chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
  return chars * size * 0.6;
}

}  // namespace tvlab
