// The SVG chart writer: elements, the palette and ramp, the x-y chart and the heatmap.
#include "report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <utility>

#include "report/layout.hpp"
#include "report/text.hpp"

namespace lowp::accuracy::report {
namespace {

// `<element name="v" ... attrs`, numbers first. (Appending, not operator+ on temporaries: GCC 12
// warns falsely there.)
void open(std::string& s, std::string_view element, std::initializer_list<std::pair<std::string_view, double>> numbers,
          std::string_view attrs) {
  s += '<';
  s += element;
  for (const auto& [name, v] : numbers) {
    s += ' ';
    s += name;
    s += "=\"";
    s += svg_number(v);
    s += '"';
  }
  if (!attrs.empty()) {
    s += ' ';
    s += attrs;
  }
}

// Closes an element: `/>`, or its tooltip and end tag.
void close(std::string& s, std::string_view element, std::string_view title) {
  if (title.empty()) {
    s += "/>\n";
    return;
  }
  s += "><title>";
  s += xml_text(title);
  s += "</title></";
  s += element;
  s += ">\n";
}

}  // namespace

std::string svg_number(double v) { return fixed("%g", v); }

Svg::Svg(double width, double height, int font_size) {
  open(s_, "svg xmlns=\"http://www.w3.org/2000/svg\"", {{"width", width}, {"height", height}},
       "font-family=\"sans-serif\" font-size=\"" + std::to_string(font_size) + "\"");
  s_ += ">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

void Svg::text(double x, double y, std::string_view content, std::string_view attrs, std::string_view title) {
  open(s_, "text", {{"x", x}, {"y", y}}, attrs);
  s_ += '>';
  s_ += xml_text(content);
  if (!title.empty()) s_.append("<title>").append(xml_text(title)).append("</title>");
  s_ += "</text>\n";
}

void Svg::turned_text(double x, double y, double degrees, std::string_view content, std::string_view attrs) {
  s_.append("<text transform=\"translate(").append(svg_number(x)).append(",").append(svg_number(y));
  s_.append(") rotate(").append(svg_number(degrees)).append(")\"");
  if (!attrs.empty()) s_.append(" ").append(attrs);
  s_.append(">").append(xml_text(content)).append("</text>\n");
}

void Svg::rect(double x, double y, double w, double h, std::string_view attrs, std::string_view title) {
  open(s_, "rect", {{"x", x}, {"y", y}, {"width", w}, {"height", h}}, attrs);
  close(s_, "rect", title);
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view attrs) {
  open(s_, "line", {{"x1", x1}, {"y1", y1}, {"x2", x2}, {"y2", y2}}, attrs);
  close(s_, "line", {});
}

void Svg::polyline(const std::vector<Point>& points, std::string_view attrs) {
  std::string xy;
  for (const Point& q : points) xy.append(xy.empty() ? "" : " ").append(svg_number(q.x)).append(",").append(svg_number(q.y));
  open(s_, "polyline", {}, "points=\"" + xy + "\"" + (attrs.empty() ? "" : " ") + std::string(attrs));
  close(s_, "polyline", {});
}

void Svg::circle(double cx, double cy, double r, std::string_view attrs, std::string_view title) {
  open(s_, "circle", {{"cx", cx}, {"cy", cy}, {"r", r}}, attrs);
  close(s_, "circle", title);
}

std::string Svg::finish() { return s_ + "</svg>\n"; }

std::string_view series_colour(std::size_t i) {
  static constexpr std::string_view kPalette[] = {"#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d",
                                                  "#e45756", "#72b7b2", "#eeca3b", "#ff9da6", "#bab0ac"};
  return kPalette[i % std::size(kPalette)];
}

std::string ramp_colour(double t) {
  static constexpr double kStops[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  const double f = std::clamp(t, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(f));
  const double u = f - i;
  const auto c = [&](int k) { return static_cast<int>(kStops[i][k] + u * (kStops[i + 1][k] - kStops[i][k])); };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c(0), c(1), c(2));
  return buf;
}

std::pair<double, double> decades(double lo, double hi, std::pair<double, double> fallback) {
  if (!(lo > 0 && hi >= lo && std::isfinite(hi))) return fallback;
  const double a = std::floor(std::log10(lo));
  return {a + 0.0, std::max(a + 1, std::ceil(std::log10(hi))) + 0.0};  // + 0.0: ceil(-0.3) is -0
}

std::string log_ramp_colour(double v, double e_lo, double e_hi) { return ramp_colour((std::log10(v) - e_lo) / (e_hi - e_lo)); }

std::string model_title(std::string_view path) {
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const std::filesystem::path f(p);
  const std::string stem = f.stem().string();
  // llama2.c's model.bin and HF's model.safetensors are named by their folder.
  if (stem == "model" && f.has_parent_path() && !f.parent_path().filename().empty()) return f.parent_path().filename().string();
  return stem.empty() ? p : stem;
}

void x_grid(Svg& s, const std::vector<Tick>& ticks, const std::function<double(double)>& pos, double y0, double y1,
            bool above) {
  for (const Tick& t : ticks) {
    const double x = pos(t.v);
    s.line(x, y0, x, y1, t.label.empty() ? "stroke=\"#f0f0f0\"" : "stroke=\"#dcdcdc\"");
    if (!t.label.empty())
      s.text(x, above ? y0 - 5 : y1 + 14, t.label, "text-anchor=\"middle\" fill=\"#444\"");
  }
}

void y_grid(Svg& s, const std::vector<Tick>& ticks, const std::function<double(double)>& pos, double x0, double x1) {
  for (const Tick& t : ticks) {
    const double y = pos(t.v);
    s.line(x0, y, x1, y, t.label.empty() ? "stroke=\"#f0f0f0\"" : "stroke=\"#dcdcdc\"");
    if (!t.label.empty()) s.text(x0 - 5, y + 4, t.label, "text-anchor=\"end\" fill=\"#444\"");
  }
}

double caption(Svg& s, double x, double y, double width, std::string_view text, int font_size, std::string_view attrs) {
  const std::vector<std::string> lines = wrap(text, width, font_size);
  const double step = font_size * 1.3;
  for (std::size_t i = 0; i < lines.size(); ++i) s.text(x, y + step * static_cast<double>(i), lines[i], attrs);
  return step * static_cast<double>(lines.size());
}

void error_bar(Svg& s, double x, double y_lo, double y_hi, std::string_view colour) {
  const std::string stroke = "stroke=\"" + std::string(colour) + "\" stroke-width=\"1.2\"";
  s.line(x, y_lo, x, y_hi, stroke);
  s.line(x - 3, y_lo, x + 3, y_lo, stroke);
  s.line(x - 3, y_hi, x + 3, y_hi, stroke);
}

namespace {

// An axis as drawn: linear [lo, hi] or log10 with lo, hi exponents of 10; its ticks.
struct Drawn {
  bool log = false;
  double lo = 0, hi = 1;
  std::vector<Tick> ticks;
  bool shows(double v) const { return std::isfinite(v) && (!log || v > 0); }
  double frac(double v) const { return ((log ? std::log10(v) : v) - lo) / (hi - lo); }
};

// The axis covering [lo, hi] (the data's, widened to the caller's range): round ends and ticks.
Drawn drawn_axis(const XyAxis& a, double lo, double hi) {
  if (std::isfinite(a.lo)) lo = std::min(lo, a.lo);
  if (std::isfinite(a.hi)) hi = std::max(hi, a.hi);
  if (a.log) {
    const auto [e0, e1] = decades(lo, hi, {-4, 0});
    return {true, e0, e1, log_ticks(e0, e1)};
  }
  // Round steps for the data's range; the axis runs 4% beyond the data (no marker on the frame),
  // its ticks at the multiples of the step inside.
  LinearAxis r = round_axis(lo, hi, a.max_steps);
  if (std::isfinite(lo) && hi > lo) r.lo = lo - 0.04 * (hi - lo), r.hi = hi + 0.04 * (hi - lo);
  return {false, r.lo, r.hi, linear_ticks(r)};
}

double widest(const std::vector<Tick>& ticks, double font) {
  double w = 0;
  for (const Tick& t : ticks) w = std::max(w, text_width(t.label, font));
  return w;
}

}  // namespace

std::string xy_chart(const XyChart& c) {
  const double font = 11, w = 560, panel_gap = 18;
  // The axes from the data: x over every panel, y per panel (error bars included).
  double xl = INFINITY, xh = -INFINITY;
  std::vector<Drawn> ys;
  for (const XyPanel& p : c.panels) {
    double yl = INFINITY, yh = -INFINITY;
    for (const XySeries& sr : p.series)
      for (std::size_t i = 0; i < sr.points.size(); ++i) {
        const Point q = sr.points[i];
        if (!(std::isfinite(q.x) && (!c.x.log || q.x > 0)) || !(std::isfinite(q.y) && (!p.y.log || q.y > 0))) continue;
        xl = std::min(xl, q.x), xh = std::max(xh, q.x);
        const double e = i < sr.err.size() && sr.err[i] > 0 ? sr.err[i] : 0;
        yh = std::max(yh, q.y + e);
        yl = std::min(yl, p.y.log && !(q.y - e > 0) ? q.y : q.y - e);
      }
    for (const double r : p.rules) yl = std::min(yl, r), yh = std::max(yh, r);
    ys.push_back(drawn_axis(p.y, yl, yh));
  }
  const Drawn xs = drawn_axis(c.x, xl, xh);
  double tick_w = 0;
  for (const Drawn& d : ys) tick_w = std::max(tick_w, widest(d.ticks, font));
  const double x0 = 30 + tick_w + 8;
  // The legend: a line per labelled series, then the numbered point labels that found no spot.
  double legend_w = 60;
  for (const XyPanel& p : c.panels)
    for (const XySeries& sr : p.series) legend_w = std::max(legend_w, text_width(sr.label, font) + 24);
  const double lx = x0 + w + 15;
  double width = lx + legend_w + 10;
  const std::vector<std::string> title = wrap(c.title, width - 20, 14 * 1.1);  // bold: about a tenth wider
  const double top = 22 + 18 * static_cast<double>(title.size());
  std::vector<double> panel_y;
  double y = top;
  for (const XyPanel& p : c.panels) {
    panel_y.push_back(y);
    y += p.height + panel_gap;
  }
  const double bottom = y - panel_gap;

  // Point labels, per panel: placed where free, else numbered.
  struct Label {
    double x, y;
    std::string text, colour;
  };
  std::vector<std::vector<Label>> wanted(c.panels.size());
  std::vector<std::vector<Box>> markers(c.panels.size());
  const auto X = [&](double v) { return x0 + xs.frac(v) * w; };
  const auto Y = [&](std::size_t k, double v) { return panel_y[k] + c.panels[k].height * (1 - ys[k].frac(v)); };
  for (std::size_t k = 0; k < c.panels.size(); ++k)
    for (std::size_t j = 0; j < c.panels[k].series.size(); ++j) {
      const XySeries& sr = c.panels[k].series[j];
      const std::string colour = sr.colour.empty() ? std::string(series_colour(j)) : sr.colour;
      for (std::size_t i = 0; i < sr.points.size(); ++i) {
        const Point q = sr.points[i];
        if (!xs.shows(q.x) || !ys[k].shows(q.y)) continue;
        if (sr.marker != XySeries::Marker::none) markers[k].push_back({X(q.x) - 4.5, Y(k, q.y) - 4.5, 9, 9});
        if (i < sr.labels.size() && !sr.labels[i].empty()) wanted[k].push_back({X(q.x), Y(k, q.y), sr.labels[i], colour});
      }
    }
  std::vector<std::vector<PlacedLabel>> placed(c.panels.size()), numbers(c.panels.size());
  std::vector<std::string> footnotes;
  for (std::size_t k = 0; k < c.panels.size(); ++k) {
    std::vector<double> px, py;
    std::vector<std::string> text;
    for (const Label& l : wanted[k]) px.push_back(l.x), py.push_back(l.y), text.push_back(l.text);
    const Box area{x0 + 1, panel_y[k] + 1, w - 2, c.panels[k].height - 2};
    placed[k] = place_labels(px, py, text, font, area, markers[k]);
    std::vector<Box> taken = markers[k];
    for (const PlacedLabel& p : placed[k])
      if (p.placed) taken.push_back(p.box);
    std::vector<double> nx, ny;
    std::vector<std::string> nt;
    for (std::size_t i = 0; i < placed[k].size(); ++i)
      if (!placed[k][i].placed) {
        footnotes.push_back(std::to_string(footnotes.size() + 1) + "  " + text[i]);
        nx.push_back(px[i]), ny.push_back(py[i]), nt.push_back(std::to_string(footnotes.size()));
      }
    numbers[k] = place_labels(nx, ny, nt, font - 1, area, taken);
    for (std::size_t n = 0; n < numbers[k].size(); ++n)  // no free spot even for the number: right-above
      if (!numbers[k][n].placed) numbers[k][n] = {{}, nx[n] + 4, ny[n] - 4, false, true};
  }
  for (const std::string& f : footnotes) legend_w = std::max(legend_w, text_width(f, font - 1) + 10);
  width = lx + legend_w + 10;
  std::size_t entries = 0;
  for (const XyPanel& p : c.panels)
    for (const XySeries& sr : p.series) entries += sr.label.empty() ? 0 : 1;
  const double legend_h = 18.0 * static_cast<double>(entries) + (footnotes.empty() ? 0 : 20 + 14.0 * static_cast<double>(footnotes.size()));
  const double note_y = bottom + 52;
  const double note_h = c.note.empty() ? 0 : font * 1.3 * static_cast<double>(wrap(c.note, width - x0 - 10, font).size());
  const double height = std::max(note_y + note_h, top + legend_h + 20);

  Svg s(width, height, static_cast<int>(font));
  for (std::size_t i = 0; i < title.size(); ++i) s.text(10, 20 + 18 * static_cast<double>(i), title[i], "font-size=\"14\" font-weight=\"bold\"");
  for (std::size_t k = 0; k < c.panels.size(); ++k) {
    const XyPanel& p = c.panels[k];
    const double py0 = panel_y[k], ph = p.height;
    std::vector<Tick> xt = xs.ticks;
    if (k + 1 < c.panels.size())
      for (Tick& t : xt) t.label.clear();
    x_grid(s, xt, X, py0, py0 + ph, false);
    y_grid(s, ys[k].ticks, [&](double v) { return Y(k, v); }, x0, x0 + w);
    s.rect(x0, py0, w, ph, "fill=\"none\" stroke=\"#999\"");
    s.turned_text(16, py0 + ph / 2, -90, p.y.title, "text-anchor=\"middle\"");
    for (const double r : p.rules)
      if (ys[k].shows(r) && ys[k].frac(r) >= 0 && ys[k].frac(r) <= 1)
        s.line(x0, Y(k, r), x0 + w, Y(k, r), "stroke=\"#555\" stroke-dasharray=\"4 3\"");
    for (std::size_t j = 0; j < p.series.size(); ++j) {
      const XySeries& sr = p.series[j];
      const std::string colour = sr.colour.empty() ? std::string(series_colour(j)) : sr.colour;
      const std::string filled = "fill=\"" + colour + "\"", hollow = "fill=\"white\" stroke=\"" + colour + "\"";
      std::vector<Point> line;
      for (std::size_t i = 0; i < sr.points.size(); ++i) {
        const Point q = sr.points[i];
        if (!xs.shows(q.x) || !ys[k].shows(q.y)) continue;
        line.push_back({X(q.x), Y(k, q.y)});
      }
      if (sr.line && !line.empty())
        s.polyline(line, "fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"1.5\"" +
                             (sr.dashed ? " stroke-dasharray=\"5 3\"" : ""));
      for (std::size_t i = 0; i < sr.points.size(); ++i) {
        const Point q = sr.points[i];
        if (!xs.shows(q.x) || !ys[k].shows(q.y)) continue;
        const double e = i < sr.err.size() ? sr.err[i] : NAN;
        if (e > 0) {  // clipped to the panel; on a log axis a bar reaching 0 or below ends at the frame
          const double top_y = std::max(py0, Y(k, q.y + e));
          const double low_y = ys[k].shows(q.y - e) ? std::min(py0 + ph, Y(k, q.y - e)) : py0 + ph;
          error_bar(s, X(q.x) + sr.dodge, low_y, top_y, colour);
        }
        if (sr.marker != XySeries::Marker::none)
          s.circle(X(q.x), Y(k, q.y), 4, sr.marker == XySeries::Marker::filled ? filled : hollow,
                   i < sr.tips.size() ? sr.tips[i] : std::string());
      }
    }
    for (std::size_t i = 0; i < placed[k].size(); ++i) {
      const PlacedLabel& l = placed[k][i];
      if (!l.placed) continue;
      if (l.leader) {  // from the point to the nearest point of the label's box
        const double qx = std::clamp(wanted[k][i].x, l.box.x, l.box.x + l.box.w),
                     qy = std::clamp(wanted[k][i].y, l.box.y, l.box.y + l.box.h);
        s.line(wanted[k][i].x, wanted[k][i].y, qx, qy, "stroke=\"#999\" stroke-width=\"0.8\"");
      }
      s.text(l.x, l.y, wanted[k][i].text, "fill=\"#222\"");
    }
  }
  // The numbers of the labels that found no spot, in footnote order.
  std::size_t num = 0;
  for (std::size_t k = 0; k < c.panels.size(); ++k)
    for (const PlacedLabel& l : numbers[k]) s.text(l.x, l.y, std::to_string(++num), "font-size=\"10\" font-weight=\"bold\" fill=\"#222\"");
  s.text(x0 + w / 2, bottom + 34, c.x.title, "text-anchor=\"middle\"");
  std::size_t entry = 0;
  for (const XyPanel& p : c.panels)
    for (std::size_t j = 0; j < p.series.size(); ++j) {
      const XySeries& sr = p.series[j];
      if (sr.label.empty()) continue;
      const std::string colour = sr.colour.empty() ? std::string(series_colour(j)) : sr.colour;
      const double ly = top + 10 + 18.0 * static_cast<double>(entry++);
      if (sr.marker == XySeries::Marker::none)
        s.line(lx - 6, ly, lx + 6, ly, "stroke=\"" + colour + "\" stroke-width=\"2\"" + (sr.dashed ? " stroke-dasharray=\"5 3\"" : ""));
      else
        s.circle(lx, ly, 4, sr.marker == XySeries::Marker::filled ? "fill=\"" + colour + "\"" : "fill=\"white\" stroke=\"" + colour + "\"");
      s.text(lx + 10, ly + 4, sr.label, "fill=\"" + colour + "\"");
    }
  for (std::size_t i = 0; i < footnotes.size(); ++i)
    s.text(lx - 6, top + 18.0 * static_cast<double>(entries) + 24 + 14 * static_cast<double>(i), footnotes[i], "font-size=\"10\" fill=\"#222\"");
  caption(s, x0, note_y, width - x0 - 10, c.note, static_cast<int>(font), "fill=\"#555\"");
  return s.finish();
}

namespace {

// Where the heatmap's parts go: the panels' top-left corners, the column names' height, the key.
struct HeatLayout {
  double label_w = 0, head_h = 0, panel_w = 0, key_y = 0, key_w = 0, width = 0, height = 0;
  std::vector<Point> panels;
};

HeatLayout heat_layout(const Heatmap& m) {
  HeatLayout l;
  const double gap = 30, band = 20, font = 10;  // band: a stacked panel's name above its cells
  l.label_w = 20;
  for (const auto& r : m.rows) l.label_w = std::max(l.label_w, text_width(r, font) + 8);
  double name_w = 0;
  for (const auto& c : m.cols) name_w = std::max(name_w, text_width(c, font));
  // Column names turned by col_angle: their height is the longest name's projection, plus air.
  l.head_h = band + name_w * std::sin(std::fabs(m.col_angle) * std::acos(-1.0) / 180) + 8;
  const std::size_t n = m.cols.size();
  const double cells_w = m.cell_w * static_cast<double>(n) + (m.col_group && n ? 4.0 * static_cast<double>((n - 1) / m.col_group) : 0);
  l.panel_w = l.label_w + cells_w;
  const double rows_h = m.cell_h * static_cast<double>(m.rows.size());
  double y = 0;
  for (std::size_t p = 0; p < m.panels.size(); ++p) {
    if (m.stacked) {  // the column names once, above the first panel
      l.panels.push_back({0, y});
      y += (p == 0 ? l.head_h : band) + rows_h + 12;
    } else {
      l.panels.push_back({static_cast<double>(p) * (l.panel_w + gap), 0});
    }
  }
  const double panels_h = m.stacked ? y - 12 : l.head_h + rows_h;
  const double panels_w = m.stacked ? l.panel_w : (l.panel_w + gap) * static_cast<double>(m.panels.size()) - gap;
  l.key_y = panels_h + 24;
  l.key_w = std::max(240.0, 42 * (m.key_hi - m.key_lo));  // room for a label per decade
  const double overhang = name_w * std::cos(m.col_angle * std::acos(-1.0) / 180);  // the last name leans right
  l.width = std::max(panels_w + overhang, 16 + l.key_w + 16 + 200);
  l.height = l.key_y + 50;
  return l;
}

}  // namespace

Point heatmap_size(const Heatmap& m) {
  const HeatLayout l = heat_layout(m);
  return {l.width, l.height};
}

void draw_heatmap(Svg& s, const Heatmap& m, double x0, double top) {
  const HeatLayout l = heat_layout(m);
  const double cw = m.cell_w, ch = m.cell_h;
  const auto col_x = [&](std::size_t c) {
    return cw * static_cast<double>(c) + (m.col_group ? 4.0 * static_cast<double>(c / m.col_group) : 0);
  };
  for (std::size_t p = 0; p < m.panels.size(); ++p) {
    const double px = x0 + l.panels[p].x, py = top + l.panels[p].y;
    const bool names = !m.stacked || p == 0;
    const double gx = px + l.label_w, gy = py + (names ? l.head_h : 20);
    s.text(px, py + 12, m.panels[p], "font-weight=\"bold\" font-size=\"12\"");
    if (names)
      for (std::size_t c = 0; c < m.cols.size(); ++c) s.turned_text(gx + col_x(c) + cw * 0.65, gy - 4, m.col_angle, m.cols[c]);
    for (std::size_t r = 0; r < m.rows.size(); ++r) {
      const double y = gy + static_cast<double>(r) * ch;
      s.text(gx - 4, y + ch - 3, m.rows[r], "text-anchor=\"end\"");
      for (std::size_t c = 0; c < m.cols.size(); ++c) {
        const HeatCell& cell = m.cells[(p * m.rows.size() + r) * m.cols.size() + c];
        if (!cell.colour.empty()) s.rect(gx + col_x(c), y, cw - 1, ch - 1, "fill=\"" + cell.colour + "\"", cell.tip);
      }
    }
  }
  // The colour key: the ramp as 40 strips, a tick per decade (labelled) and minor ones.
  const double kx = x0 + 16, ky = top + l.key_y, kw = l.key_w;
  s.text(kx - 16, ky - 6, m.key_title);
  const int strips = 40;
  for (int i = 0; i < strips; ++i)
    s.rect(kx + kw * i / strips, ky, kw / strips + 0.5, 12, "fill=\"" + ramp_colour((i + 0.5) / strips) + "\"");
  s.rect(kx, ky, kw, 12, "fill=\"none\" stroke=\"#999\"");
  for (const Tick& t : log_ticks(m.key_lo, m.key_hi)) {
    const double tx = kx + (std::log10(t.v) - m.key_lo) / (m.key_hi - m.key_lo) * kw;
    s.line(tx, ky + 12, tx, ky + (t.label.empty() ? 15 : 18), "stroke=\"#444\"");
    if (!t.label.empty()) s.text(tx, ky + 29, t.label, "text-anchor=\"middle\" fill=\"#444\"");
  }
  caption(s, kx + kw + 20, ky + 10, l.width - (kx - x0) - kw - 20, m.key_note, 10, "fill=\"#555\"");
}

std::string heatmap(const Heatmap& m) {
  const Point size = heatmap_size(m);
  const std::vector<std::string> title = wrap(m.title, size.x, 14 * 1.1);
  const double top = 14 + 18 * static_cast<double>(title.size());
  Svg s(size.x + 20, top + size.y, 10);
  for (std::size_t i = 0; i < title.size(); ++i)
    s.text(10, 18 + 18 * static_cast<double>(i), title[i], "font-size=\"14\" font-weight=\"bold\"");
  draw_heatmap(s, m, 10, top);
  return s.finish();
}

}  // namespace lowp::accuracy::report
