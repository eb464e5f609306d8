// The one SVG chart writer of lowp (private to lowp_accuracy). Every chart goes through it: the
// model and tensor sweeps' bar charts, the sensitivity heatmap, the search's Pareto chart and the
// training loss chart, so they share one header, one spelling of numbers, one escaping of text,
// one palette and one colour ramp.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lowp::accuracy::report {

struct Point {
  double x = 0, y = 0;
};

// An SVG document written element by element. Text (content and tooltips) is escaped here;
// `attrs` are further attributes written as they are (`text-anchor="end" fill="#555"`). A
// non-empty `title` is the element's tooltip.
class Svg {
 public:
  // The header (sans-serif at `font_size`) and a white background.
  Svg(double width, double height, int font_size);
  void text(double x, double y, std::string_view content, std::string_view attrs = {}, std::string_view title = {});
  // Text turned by `degrees` (clockwise) about its anchor (x, y).
  void turned_text(double x, double y, double degrees, std::string_view content, std::string_view attrs = {});
  void rect(double x, double y, double w, double h, std::string_view attrs, std::string_view title = {});
  void line(double x1, double y1, double x2, double y2, std::string_view attrs);
  void polyline(const std::vector<Point>& points, std::string_view attrs);
  void circle(double cx, double cy, double r, std::string_view attrs, std::string_view title = {});
  // The document, closed.
  std::string finish();

 private:
  std::string s_;
};

// A coordinate or size as the charts write it: up to 6 significant digits ("%g").
std::string svg_number(double v);
// The i-th colour of the series palette (Tableau 10; cycles).
std::string_view series_colour(std::size_t i);
// t in [0, 1] (clamped) on a viridis-like ramp, dark blue to yellow, as "#rrggbb".
std::string ramp_colour(double t);
// The whole decades [floor(log10 lo), ceil(log10 hi)], at least one wide, around positive lo <= hi;
// `fallback` when there is no such pair.
std::pair<double, double> decades(double lo, double hi, std::pair<double, double> fallback);

// A chart of points on an x axis and a y axis (linear, or log10 with a grid line per decade):
// each series a line through its points and/or a marker at each, a legend at the right.
struct XySeries {
  std::string label;   // legend text; empty: no legend entry
  std::string colour;  // empty: series_colour(index)
  std::vector<Point> points;  // data coordinates; a non-finite (or, on a log axis, non-positive) one is skipped
  bool line = true;
  enum class Marker { none, filled, hollow } marker = Marker::none;
  std::vector<std::string> tips;    // per point, optional: its tooltip
  std::vector<std::string> labels;  // per point, optional: text beside its marker
};
struct XyAxis {
  std::string title;
  bool log = false;
  double lo = 0, hi = 1;      // the range drawn (log: exponents of 10)
  int ticks = 4;              // linear: ticks + 1 labels from lo to hi
  const char* format = "%g";  // linear tick labels
};
struct XyChart {
  std::string title;
  XyAxis x, y;
  std::vector<XySeries> series;
  std::string note;          // one line under the chart
  double legend_width = 150;
};
std::string xy_chart(const XyChart& c);

// Panels of coloured cells, one panel per `panels` entry, a row per `rows` entry and a column per
// `cols` entry (names turned 60 degrees above); a cell is drawn where cell(p, r, c) gives a colour.
// `scale` fills the colour key under the panels: its title, the values at its two ends and a
// sentence beside it.
struct HeatCell {
  std::string colour;  // empty: no cell
  std::string tip;
};
struct Heatmap {
  std::string title;
  std::vector<std::string> panels, rows, cols;
  std::vector<HeatCell> cells;  // panels x rows x cols, row-major
  std::string scale_title, scale_lo, scale_hi, scale_note;
  std::vector<std::string> scale_colours;  // the colour key, low to high
};
std::string heatmap(const Heatmap& h);

}  // namespace lowp::accuracy::report
