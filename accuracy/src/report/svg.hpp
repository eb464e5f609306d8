// The one SVG chart writer of lowp (private to lowp_accuracy). Every chart goes through it: the
// model and tensor sweeps' bar charts, the sensitivity heatmap, the search's Pareto chart and the
// training loss chart, so they share one header, one spelling of numbers, one escaping of text,
// one palette, one colour ramp, one way to draw axes (report/axis.hpp) and to lay out text
// (report/layout.hpp).
#pragma once
#include <cmath>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "report/axis.hpp"

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
// `fallback` when there is no such pair. (+0, never -0.)
std::pair<double, double> decades(double lo, double hi, std::pair<double, double> fallback);
// The colour of positive v on the ramp over the decades [e_lo, e_hi] (log10).
std::string log_ramp_colour(double v, double e_lo, double e_hi);
// The name a chart's title gives a model: its file name without directories or extension
// ("../shared/stories260K.gguf" -> "stories260K"; a folder, or a file named model.* (llama2.c's
// model.bin, HF's model.safetensors): the folder's name; a built-in name: itself).
std::string model_title(std::string_view path);

// Axis drawing shared by the charts: for each tick a grid line across the plot and, for a labelled
// one, its label; `pos` maps a data value to the coordinate along the axis.
// Vertical grid lines from y0 to y1 (an x axis), labels above y0 (`above`) or below y1.
void x_grid(Svg& s, const std::vector<Tick>& ticks, const std::function<double(double)>& pos, double y0,
            double y1, bool above);
// Horizontal grid lines from x0 to x1 (a y axis), labels left of x0.
void y_grid(Svg& s, const std::vector<Tick>& ticks, const std::function<double(double)>& pos, double x0,
            double x1);
// Lines of text (a caption) wrapped to `width`, from baseline y down; returns the height used.
double caption(Svg& s, double x, double y, double width, std::string_view text, int font_size, std::string_view attrs);
// An error bar: a vertical whisker from (x, y_lo) to (x, y_hi) with caps.
void error_bar(Svg& s, double x, double y_lo, double y_hi, std::string_view colour);

// A chart of points on an x axis and one or more y panels stacked under each other (sharing x):
// each series a line through its points and/or a marker at each, with error bars where given; a
// legend at the right. Axes are linear (round 1-2-5 ticks) or log10 (decades, minor ticks); point
// labels are placed where they overlap nothing, else the point gets a number listed in the legend.
struct XySeries {
  std::string label;   // legend text; empty: no legend entry
  std::string colour;  // empty: series_colour(index within its panel)
  std::vector<Point> points;  // data coordinates; a non-finite (or, on a log axis, non-positive) one is skipped
  bool line = true;
  bool dashed = false;
  enum class Marker { none, filled, hollow } marker = Marker::none;
  std::vector<std::string> tips;    // per point, optional: its tooltip
  std::vector<std::string> labels;  // per point, optional: text beside its marker
  std::vector<double> err;          // per point, optional: the error bar's half-length in y (0 or NaN: none)
  double dodge = 0;  // px: error bars drawn this far right of their points (series sharing x stay apart)
};
struct XyAxis {
  std::string title;
  bool log = false;
  double lo = NAN, hi = NAN;  // the data range the axis must cover; NaN: the points' (bars included)
  int max_steps = 6;          // linear: at most this many 1-2-5 steps
};
struct XyPanel {
  XyAxis y;
  std::vector<XySeries> series;
  double height = 340;
  std::vector<double> rules;  // y values marked by a dashed line across (e.g. 0)
};
struct XyChart {
  std::string title;
  XyAxis x;
  std::vector<XyPanel> panels;  // top to bottom
  std::string note;             // a caption under the chart, wrapped to its width
};
std::string xy_chart(const XyChart& c);

// Panels of coloured cells, one panel per `panels` entry, a row per `rows` entry and a column per
// `cols` entry (names turned above, a small gap after every `col_group` columns); a cell is drawn
// where cell(p, r, c) gives a colour. Panels sit side by side, or under each other when `stacked`
// (the column names then once, above the first). Under them a colour key: the ramp over the decades [key_lo, key_hi] with a labelled
// tick per decade (and 2, 5 over short ranges), its title and a sentence.
struct HeatCell {
  std::string colour;  // empty: no cell
  std::string tip;
};
struct Heatmap {
  std::string title;
  std::vector<std::string> panels, rows, cols;
  std::vector<HeatCell> cells;  // panels x rows x cols, row-major
  double cell_w = 26, cell_h = 16;
  double col_angle = -60;     // the column names' turn (-90: upright)
  std::size_t col_group = 0;  // 0: no gaps
  bool stacked = false;
  std::string key_title, key_note;
  double key_lo = -6, key_hi = 0;  // exponents of 10
};
// The size the heatmap takes (title excluded), and drawing it with its top-left corner at (x, y).
Point heatmap_size(const Heatmap& h);
void draw_heatmap(Svg& s, const Heatmap& h, double x, double y);
// A whole document: the title, then the heatmap.
std::string heatmap(const Heatmap& h);

}  // namespace lowp::accuracy::report
