// The SVG chart writer: elements, the palette and ramp, the x-y chart and the heatmap.
#include "report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <utility>

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
  return {a, std::max(a + 1, std::ceil(std::log10(hi)))};
}

std::string xy_chart(const XyChart& c) {
  const double x0 = 80, y0 = 50, w = 560, h = 340;
  const double width = x0 + w + c.legend_width, height = y0 + h + 64;
  const auto drawn = [](const XyAxis& a, double v) { return std::isfinite(v) && (!a.log || v > 0); };
  const auto frac = [](const XyAxis& a, double v) { return ((a.log ? std::log10(v) : v) - a.lo) / (a.hi - a.lo); };
  const auto X = [&](double v) { return x0 + frac(c.x, v) * w; };
  const auto Y = [&](double v) { return y0 + h - frac(c.y, v) * h; };
  Svg s(width, height, 11);
  s.text(10, 20, c.title, "font-size=\"14\" font-weight=\"bold\"");
  s.rect(x0, y0, w, h, "fill=\"none\" stroke=\"#999\"");
  if (c.y.log) {
    for (double e = c.y.lo; e <= c.y.hi + 1e-9; ++e) {
      const double gy = Y(std::pow(10.0, e));
      s.line(x0, gy, x0 + w, gy, "stroke=\"#eee\"");
      s.text(x0 - 6, gy + 4, "1e" + svg_number(e), "text-anchor=\"end\"");
    }
  } else {
    for (int i = 0; i <= c.y.ticks; ++i) {
      const double v = c.y.lo + (c.y.hi - c.y.lo) * i / c.y.ticks, gy = Y(v);
      s.line(x0, gy, x0 + w, gy, "stroke=\"#eee\"");
      s.text(x0 - 6, gy + 4, fixed(c.y.format, v), "text-anchor=\"end\"");
    }
  }
  for (int i = 0; i <= c.x.ticks; ++i) {
    const double v = c.x.lo + (c.x.hi - c.x.lo) * i / c.x.ticks;
    s.text(X(v), y0 + h + 16, fixed(c.x.format, v), "text-anchor=\"middle\"");
  }
  s.text(x0 + w / 2, y0 + h + 36, c.x.title, "text-anchor=\"middle\"");
  s.turned_text(20, y0 + h / 2, -90, c.y.title, "text-anchor=\"middle\"");
  const double lx = x0 + w + 15;
  std::size_t entry = 0;
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const XySeries& sr = c.series[k];
    const std::string colour = sr.colour.empty() ? std::string(series_colour(k)) : sr.colour;
    const std::string filled = "fill=\"" + colour + "\"", hollow = "fill=\"none\" stroke=\"" + colour + "\"";
    std::vector<Point> line;
    for (std::size_t i = 0; i < sr.points.size(); ++i) {
      const Point p = sr.points[i];
      if (!drawn(c.x, p.x) || !drawn(c.y, p.y)) continue;
      const Point q{X(p.x), Y(p.y)};
      line.push_back(q);
      const std::string tip = i < sr.tips.size() ? sr.tips[i] : std::string();
      if (sr.marker != XySeries::Marker::none)
        s.circle(q.x, q.y, 4, sr.marker == XySeries::Marker::filled ? filled : hollow, tip);
      if (i < sr.labels.size() && !sr.labels[i].empty()) s.text(q.x + 6, q.y - 4, sr.labels[i]);
    }
    if (sr.line && !line.empty()) s.polyline(line, "fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"1.5\"");
    if (sr.label.empty()) continue;
    const double ly = y0 + 10 + 18.0 * static_cast<double>(entry++);
    if (sr.marker == XySeries::Marker::none) s.line(lx - 6, ly, lx + 4, ly, "stroke=\"" + colour + "\" stroke-width=\"2\"");
    else s.circle(lx, ly, 4, sr.marker == XySeries::Marker::filled ? filled : hollow);
    s.text(lx + 10, ly + 4, sr.label, "fill=\"" + colour + "\"");
  }
  if (!c.note.empty()) s.text(x0, height - 8, c.note, "fill=\"#555\"");
  return s.finish();
}

std::string heatmap(const Heatmap& m) {
  const double cw = 26, ch = 16, label_w = 90, head_h = 110, x0 = 10, top = 40, gap = 30;
  const double panel_w = label_w + cw * static_cast<double>(m.cols.size());
  const double panel_h = head_h + ch * static_cast<double>(m.rows.size());
  const double np = static_cast<double>(m.panels.size());
  Svg s(x0 + (panel_w + gap) * np + 10, top + panel_h + 70, 10);
  s.text(x0, 18, m.title, "font-size=\"14\" font-weight=\"bold\"");
  for (std::size_t p = 0; p < m.panels.size(); ++p) {
    const double px = x0 + static_cast<double>(p) * (panel_w + gap), gx = px + label_w, gy = top + head_h;
    s.text(px, top + 12, m.panels[p], "font-weight=\"bold\" font-size=\"12\"");
    for (std::size_t c = 0; c < m.cols.size(); ++c) s.turned_text(gx + (static_cast<double>(c) + 0.6) * cw, gy - 4, -60, m.cols[c]);
    for (std::size_t r = 0; r < m.rows.size(); ++r) {
      const double y = gy + static_cast<double>(r) * ch;
      s.text(gx - 4, y + ch - 4, m.rows[r], "text-anchor=\"end\"");
      for (std::size_t c = 0; c < m.cols.size(); ++c) {
        const HeatCell& cell = m.cells[(p * m.rows.size() + r) * m.cols.size() + c];
        if (!cell.colour.empty())
          s.rect(gx + static_cast<double>(c) * cw, y, cw - 1, ch - 1, "fill=\"" + cell.colour + "\"", cell.tip);
      }
    }
  }
  const double ly = top + panel_h + 20, kx = x0 + 140, n = static_cast<double>(m.scale_colours.size());
  s.text(x0, ly + 10, m.scale_title);
  for (std::size_t i = 0; i < m.scale_colours.size(); ++i)
    s.rect(kx + static_cast<double>(i) * 12, ly, 12, 12, "fill=\"" + m.scale_colours[i] + "\"");
  s.text(kx, ly + 26, m.scale_lo);
  s.text(kx + (n - 1) * 12, ly + 26, m.scale_hi);
  s.text(kx + n * 12 + 28, ly + 10, m.scale_note);
  return s.finish();
}

}  // namespace lowp::accuracy::report
