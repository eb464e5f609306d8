// The one SVG chart writer (accuracy/src/report/svg.hpp): read back with Boost.PropertyTree's
// XML reader, an independent parser. The x-y chart puts each point where the axis mapping
// written out in the test says, skips what a log axis cannot show and escapes hostile text; the
// heatmap draws a cell per given colour. Then what a reader sees: round tick values (1, 2 or 5 x
// 10^k apart, read back from the labels), no "-0", point labels that do not overlap on a crowded
// Pareto chart, error bars where the data has standard errors, titles without directories and
// captions inside the canvas.
#include <gtest/gtest.h>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "report/axis.hpp"
#include "report/layout.hpp"
#include "report/svg.hpp"
#include "sweep/report_pareto.hpp"
#include "lowp/accuracy/report.hpp"

namespace {

namespace pt = boost::property_tree;
namespace report = lowp::accuracy::report;

pt::ptree parse_xml(const std::string& s) {
  std::istringstream in(s);
  pt::ptree t;
  pt::read_xml(in, t);  // throws on malformed XML
  return t.get_child("svg");
}

// Every child named `key` at any depth, in document order.
void collect(const pt::ptree& t, const std::string& key, std::vector<const pt::ptree*>& out) {
  for (const auto& [k, child] : t) {
    if (k == key) out.push_back(&child);
    collect(child, key, out);
  }
}

double attr(const pt::ptree& e, const std::string& name) { return std::stod(e.get<std::string>("<xmlattr>." + name)); }

TEST(SvgChart, XyChartPlacesPointsOnItsAxesAndEscapesText) {
  report::XyChart c;
  c.title = "a <b> & \"c\"";
  c.x = {"x", false, 0, 10, 5};  // ticks 0, 2, .. 10; the axis runs 4% beyond: -0.4 .. 10.4
  report::XyPanel p;
  p.y = {"y", true, 1e-3, 1};  // the decades 1e-3 .. 1
  report::XySeries s;
  s.label = "s<1>";
  s.points = {{0, 1e-3}, {5, -1}, {5, 1e-2}, {10, 1}, {7, NAN}};  // -1 and NaN cannot be drawn
  s.marker = report::XySeries::Marker::filled;
  s.tips = {"p0", "p1", "p2 <x>", "p3", "p4"};
  p.series.push_back(s);
  c.panels.push_back(p);
  const std::string doc = report::xy_chart(c);
  const pt::ptree svg = parse_xml(doc);
  std::vector<const pt::ptree*> frame, circles, lines;
  collect(svg, "rect", frame);
  ASSERT_EQ(frame.size(), 2u);  // the background and the plot frame
  const double x0 = attr(*frame[1], "x"), y0 = attr(*frame[1], "y"), w = attr(*frame[1], "width"),
               h = attr(*frame[1], "height");
  collect(svg, "circle", circles);
  ASSERT_EQ(circles.size(), 4u);  // three points and the legend's marker
  const double want[3][2] = {{0, 1e-3}, {5, 1e-2}, {10, 1}};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(attr(*circles[i], "cx"), x0 + (want[i][0] + 0.4) / 10.8 * w, 1e-3) << i;
    EXPECT_NEAR(attr(*circles[i], "cy"), y0 + h - (std::log10(want[i][1]) + 3) / 3 * h, 1e-3) << i;
  }
  EXPECT_EQ(circles[1]->get<std::string>("title"), "p2 <x>");
  collect(svg, "polyline", lines);
  ASSERT_EQ(lines.size(), 1u);
  const std::string points = lines[0]->get<std::string>("<xmlattr>.points");
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 3) << points;  // one x,y pair per drawn point
  EXPECT_NE(doc.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(doc.find("s&lt;1&gt;"), std::string::npos);
  EXPECT_TRUE(doc.ends_with("</svg>\n"));
}

TEST(SvgChart, HeatmapDrawsACellPerColourAndTheKey) {
  report::Heatmap m;
  m.title = "t";
  m.panels = {"p0", "p1"};
  m.rows = {"r0", "r1", "r2"};
  m.cols = {"c0", "c1"};
  m.cells.resize(12);
  m.cells[0] = {"#000000", "first"};
  m.cells[11] = {"#ffffff", "last & <x>"};
  m.key_lo = -3;
  m.key_hi = 0;
  const pt::ptree svg = parse_xml(report::heatmap(m));
  std::vector<const pt::ptree*> rects;
  collect(svg, "rect", rects);
  ASSERT_EQ(rects.size(), 1u + 2u + 40u + 1u);  // background, two cells, the key's 40 strips and frame
  EXPECT_EQ(rects[1]->get<std::string>("<xmlattr>.fill"), "#000000");
  EXPECT_EQ(rects[2]->get<std::string>("title"), "last & <x>");
  // The ramp's ends are viridis' (68, 1, 84) and (253, 231, 37).
  EXPECT_EQ(report::ramp_colour(0), "#440154");
  EXPECT_EQ(report::ramp_colour(1), "#fde725");
  EXPECT_EQ(report::ramp_colour(-1), "#440154");
  EXPECT_EQ(rects[3]->get<std::string>("<xmlattr>.fill"), report::ramp_colour(0.5 / 40));  // the first strip's middle
}

TEST(SvgChart, DecadesCoverTheRangeOrFallBack) {
  EXPECT_EQ(report::decades(2e-4, 0.3, {-6, 0}), std::make_pair(-4.0, 0.0));
  EXPECT_EQ(report::decades(1e-3, 1e-3, {-6, 0}), std::make_pair(-3.0, -2.0));  // at least one decade
  EXPECT_EQ(report::decades(INFINITY, 0, {-6, 0}), std::make_pair(-6.0, 0.0));  // nothing positive
}

// A label's text box as this test estimates it, independently of report::text_width: 0.55 em per
// character (DejaVu Sans' mean advance over lowercase letters and digits is about 0.6 em, so this
// is if anything smaller: overlaps it finds are real), the font size high, the baseline 0.8 em
// below the top. start/middle/end anchors as SVG defines them.
report::Box text_box(const pt::ptree& t, double font) {
  const std::string s = t.get_value<std::string>();
  const double w = 0.55 * font * static_cast<double>(s.size());
  const double x = attr(t, "x"), y = attr(t, "y");
  const std::string anchor = t.get<std::string>("<xmlattr>.text-anchor", "start");
  const double left = anchor == "end" ? x - w : anchor == "middle" ? x - w / 2 : x;
  return {left, y - 0.8 * font, w, font};
}

// Is m x 10^k with m in {1, 2, 5}: the mantissa read in decimal.
bool one_two_five(double step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6e", step);  // "2.000000e-03"
  const std::string m(buf, 8);
  return m == "1.000000" || m == "2.000000" || m == "5.000000";
}

// Every text element whose `attrs` include `key`=`value`, with its parsed content.
std::vector<const pt::ptree*> texts_with(const pt::ptree& svg, const std::string& key, const std::string& value) {
  std::vector<const pt::ptree*> all, out;
  collect(svg, "text", all);
  for (const auto* t : all)
    if (t->get<std::string>("<xmlattr>." + key, "") == value) out.push_back(t);
  return out;
}

TEST(SvgAxis, LinearStepsAreOneTwoFiveAndTheFewestThatFit) {
  // Ranges of every size and sign; the answer is checked against the definition: the step is
  // m x 10^k (m in 1, 2, 5), the ends are whole steps covering [lo, hi] in at most max steps, and
  // the next smaller 1-2-5 step would need more.
  const double ranges[][2] = {{0, 1},      {0, 0.37},   {-0.013, 0.047}, {3.7, 4.9},  {-8.9e-7, 0.0493},
                              {4.25, 16},  {0, 73.2},   {1.02, 1.08},    {-250, -3},  {2.5e-5, 2.6e-5},
                              {0, 1234567}, {0.1, 0.1}, {-1e-9, 1e-9},   {17, 99.5}};
  for (const auto& r : ranges)
    for (int max_steps : {3, 4, 5, 6, 8}) {
      const report::LinearAxis a = report::round_axis(r[0], r[1], max_steps);
      const std::string at = std::to_string(r[0]) + ".." + std::to_string(r[1]) + " /" + std::to_string(max_steps);
      EXPECT_TRUE(one_two_five(a.step)) << at << " step " << a.step;
      EXPECT_LE(a.lo, r[0] + a.step * 1e-9) << at;  // whole steps: exact up to the rounding of i x step
      EXPECT_GE(a.hi, r[1] - a.step * 1e-9) << at;
      const double n = (a.hi - a.lo) / a.step;
      EXPECT_NEAR(n, std::round(n), 1e-6) << at;
      EXPECT_NEAR(a.lo / a.step, std::round(a.lo / a.step), 1e-6) << at;
      EXPECT_LE(std::round(n), max_steps) << at;
      if (r[1] > r[0]) {  // the next smaller 1-2-5 step: 5 -> 2, 2 -> 1, 1 -> 0.5
        const double smaller = one_two_five(a.step / 2) ? a.step / 2 : a.step / 2.5;
        const double m = std::ceil(r[1] / smaller - 1e-9) - std::floor(r[0] / smaller + 1e-9);
        EXPECT_GT(m, max_steps) << at << ": " << smaller << " would do";
      }
      // The labels read back as the tick values, each one step apart, none "-0".
      const auto ticks = report::linear_ticks(a);
      ASSERT_GE(ticks.size(), 2u) << at;
      for (std::size_t i = 0; i < ticks.size(); ++i) {
        const std::string& l = ticks[i].label;
        EXPECT_FALSE(l[0] == '-' && l.find_first_not_of("0.", 1) == std::string::npos) << at << " " << l;
        EXPECT_NEAR(std::stod(ticks[i].label), a.lo + a.step * static_cast<double>(i), a.step * 1e-6) << at;
      }
    }
}

TEST(SvgAxis, NoMinusZeroAnywhere) {
  EXPECT_EQ(report::tick_number(-0.0, 0), "0");
  EXPECT_EQ(report::tick_number(-0.004, 2), "0.00");
  EXPECT_EQ(report::tick_number(-0.006, 2), "-0.01");
  // decades() of a range below 1: ceil(log10 0.5) is -0 in IEEE arithmetic.
  const auto d = report::decades(0.05, 0.5, {-6, 0});
  EXPECT_FALSE(std::signbit(d.second));
  EXPECT_EQ(report::decade_label(static_cast<int>(d.second)), "1");
  // The heatmap's colour key over such a range: real ticks, none "-0".
  report::Heatmap m;
  m.panels = {"p"};
  m.rows = {"r"};
  m.cols = {"c"};
  m.cells = {{report::log_ramp_colour(0.1, d.first, d.second), ""}};
  m.key_lo = d.first;
  m.key_hi = d.second;
  const pt::ptree svg = parse_xml(report::heatmap(m));
  const auto labels = texts_with(svg, "fill", "#444");
  std::vector<std::string> got;
  for (const auto* t : labels) got.push_back(t->get_value<std::string>());
  EXPECT_EQ(got, (std::vector<std::string>{"0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"}));
}

TEST(SvgAxis, LogTicksAtDecadesWithMinorTicks) {
  const auto t = report::log_ticks(-5, 0);
  std::size_t labelled = 0;
  for (const auto& k : t) {
    if (k.label.empty()) continue;
    ++labelled;
    EXPECT_NEAR(std::log10(k.v), std::round(std::log10(k.v)), 1e-12) << k.label;  // only decades labelled
    EXPECT_NEAR(std::stod(k.label), k.v, k.v * 1e-12) << k.label;
  }
  EXPECT_EQ(labelled, 6u);
  EXPECT_EQ(t.size(), 6u + 5u * 8u);  // 2..9 between each pair of decades
}

// An x-y chart whose ticks are read back from the drawing: x labels under the frame, y labels
// left of it; consecutive labels one 1-2-5 step apart, and placed linearly (or, on the log axis,
// log-linearly) in their value.
TEST(SvgChart, RenderedTickLabelsAreRoundAndWhereTheirValuesAre) {
  report::XyChart c;
  c.x = {"x", false};
  report::XyPanel lin, lg;
  lin.y = {"y", false};
  lg.y = {"k", true};
  lin.series.push_back({"a", "", {{4.37, 2.913}, {4.81, 3.174}, {5.02, 2.2}}, true, false, {}, {}, {}, {}});
  lg.series.push_back({"b", "", {{4.37, 3e-4}, {5.02, 0.071}}, true, false, {}, {}, {}, {}});
  c.panels = {lin, lg};
  const pt::ptree svg = parse_xml(report::xy_chart(c));
  const auto x_labels = texts_with(svg, "text-anchor", "middle"), y_labels = texts_with(svg, "text-anchor", "end");
  std::vector<std::pair<double, double>> xs;  // (value, position)
  for (const auto* t : x_labels)
    if (t->get<std::string>("<xmlattr>.fill", "") == "#444") xs.push_back({std::stod(t->get_value<std::string>()), attr(*t, "x")});
  ASSERT_GE(xs.size(), 3u);
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const double step = xs[i].first - xs[i - 1].first;
    EXPECT_TRUE(one_two_five(step)) << step;
    EXPECT_NEAR(step, xs[1].first - xs[0].first, 1e-9);
    EXPECT_NEAR(xs[i].second - xs[i - 1].second, xs[1].second - xs[0].second, 0.01);  // 6 digits written
  }
  std::vector<std::pair<double, double>> ys;
  for (const auto* t : y_labels) ys.push_back({std::stod(t->get_value<std::string>()), attr(*t, "y")});
  ASSERT_GE(ys.size(), 5u);
  // The linear panel's labels come first (top panel), then the log panel's decades (and 2, 5).
  std::size_t split = 1;
  while (split < ys.size() && ys[split].second < ys[split - 1].second) ++split;
  ASSERT_LT(split, ys.size());
  for (std::size_t i = 1; i < split; ++i) EXPECT_TRUE(one_two_five(ys[i].first - ys[i - 1].first)) << ys[i].first;
  for (std::size_t i = split; i < ys.size(); ++i) {
    const double e = std::log10(ys[i].first), m = ys[i].first / std::pow(10.0, std::floor(e + 1e-12));
    EXPECT_TRUE(std::fabs(m - 1) < 1e-9 || std::fabs(m - 2) < 1e-9 || std::fabs(m - 5) < 1e-9) << ys[i].first;
  }
}

// A crowded Pareto chart: many recipes between 4 and 4.3 bits with close KLDs, and bf16 at 16. No two labels'
// boxes overlap, none covers a marker, and every name is shown (beside its point or numbered in
// the legend).
TEST(SvgChart, CrowdedParetoLabelsDoNotOverlap) {
  std::vector<lowp::accuracy::ParetoPoint> pts;
  const char* names[] = {"int4:b32:int", "mxfp4", "nvfp4", "Q4_0", "Q4_1", "Q4_K_M", "IQ4_NL", "IQ4_XS", "Q5_0",
                         "Q5_1",         "Q5_K_M", "Q3_K_M", "e2m1:b16", "e2m1:b32", "int4:b16:int"};
  for (int i = 0; i < 15; ++i) {
    lowp::accuracy::ParetoPoint p;
    p.name = i < 3 ? std::string("uniform ") + names[i] : names[i];
    p.bpw = 4.0 + 0.02 * i;  // with bf16 at 16 bits, about a pixel apart: the markers pile up
    p.measured = 0.02 + 0.001 * (i % 4);
    p.measured_se = 0.001;
    p.predicted = i < 3 ? 0.03 : NAN;
    p.llama_cpp = i >= 3;
    pts.push_back(p);
  }
  pts.push_back({"uniform bf16", 16, 2e-5, 2.2e-5, 4e-6, NAN, false, false});
  for (const double b : {4.25, 4.5, 5.0}) pts.push_back({"search-" + std::to_string(b), b, 0.02, 0.021, 0.001, NAN, true, false});
  std::ostringstream out;
  lowp::accuracy::write_pareto_svg(out, pts, "../shared/gguf/modelA-F32.gguf");
  const pt::ptree svg = parse_xml(out.str());
  const auto labels = texts_with(svg, "fill", "#222");
  std::vector<report::Box> boxes;
  std::string shown;
  for (const auto* t : labels) {
    const double font = t->get<double>("<xmlattr>.font-size", 11);
    boxes.push_back(text_box(*t, font));
    shown += t->get_value<std::string>() + "\n";
  }
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j)
      EXPECT_FALSE(report::overlap(boxes[i], boxes[j]))
          << labels[i]->get_value<std::string>() << " overlaps " << labels[j]->get_value<std::string>();
  std::vector<const pt::ptree*> circles;
  collect(svg, "circle", circles);
  for (const auto* c : circles)
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      const report::Box& b = boxes[i];
      const double cx = attr(*c, "cx"), cy = attr(*c, "cy");
      EXPECT_FALSE(cx > b.x && cx < b.x + b.w && cy > b.y && cy < b.y + b.h) << labels[i]->get_value<std::string>();
    }
  for (int i = 0; i < 15; ++i) EXPECT_NE(shown.find(names[i]), std::string::npos) << names[i];
  // The title names the model, not its path.
  const std::string title = svg.get_child("text").get_value<std::string>();
  EXPECT_EQ(title.find('/'), std::string::npos) << title;
  EXPECT_NE(title.find("modelA-F32"), std::string::npos) << title;
}

// Error bars where the data has a standard error: a vertical whisker at the point's x from y - e
// to y + e, read against the y axis the chart labels (two of its tick labels give the mapping).
TEST(SvgChart, ErrorBarsSpanTheStandardError) {
  report::XyChart c;
  c.x = {"x", false};
  report::XyPanel p;
  p.y = {"y", false};
  p.series.push_back({"a", "#123456", {{1, 10}, {2, 12}, {3, 11}}, false, false, report::XySeries::Marker::filled, {}, {}, {1.5, 0, 0.5}});
  c.panels = {p};
  const pt::ptree svg = parse_xml(report::xy_chart(c));
  std::vector<std::pair<double, double>> ys;
  for (const auto* t : texts_with(svg, "text-anchor", "end")) ys.push_back({std::stod(t->get_value<std::string>()), attr(*t, "y") - 4});
  ASSERT_GE(ys.size(), 2u);
  const double per = (ys[1].second - ys[0].second) / (ys[1].first - ys[0].first);
  const auto Y = [&](double v) { return ys[0].second + (v - ys[0].first) * per; };
  std::vector<const pt::ptree*> circles, lines;
  collect(svg, "circle", circles);
  collect(svg, "line", lines);
  const double want[3][2] = {{10, 1.5}, {12, 0}, {11, 0.5}};
  for (int i = 0; i < 3; ++i) {
    const double cx = attr(*circles[i], "cx");
    int whiskers = 0;
    for (const auto* l : lines) {
      if (l->get<std::string>("<xmlattr>.stroke", "") != "#123456" || attr(*l, "x1") != cx || attr(*l, "x2") != cx) continue;
      ++whiskers;
      EXPECT_NEAR(std::max(attr(*l, "y1"), attr(*l, "y2")), Y(want[i][0] - want[i][1]), 0.01) << i;
      EXPECT_NEAR(std::min(attr(*l, "y1"), attr(*l, "y2")), Y(want[i][0] + want[i][1]), 0.01) << i;
    }
    EXPECT_EQ(whiskers, want[i][1] > 0 ? 1 : 0) << i;
  }
}

// The model sweep: a model path gives a title without '/', KLD and ln(PPL ratio) whiskers where
// the standard errors are, and a long failure message cut to the canvas.
TEST(SvgChart, ModelSweepTitleWhiskersAndCaptionsFit) {
  using namespace lowp::accuracy;
  ModelSweep s;
  s.model = "/data/models/tinyllamas/stories260K.gguf";
  s.reference = "fp32";
  s.ref_ppl = 12.5;
  s.scored = 100;
  s.ctx = 64;
  RecipeResult a, b, f;
  a.recipe = "bf16";
  a.cmp.kld_mean = 0.0025, a.cmp.kld_se = 0.0004, a.cmp.ln_ppl_ratio = 0.01, a.cmp.ln_ppl_ratio_se = 0.002;
  b.recipe = "mxfp4";
  b.cmp.kld_mean = 0.06, b.cmp.kld_se = 0.0, b.cmp.ln_ppl_ratio = -0.001, b.cmp.ln_ppl_ratio_se = NAN;
  f.recipe = "broken";
  f.error = "recipe 'broken': " + std::string(400, 'x') + " is much too long to show";
  s.results = {a, b, f};
  std::ostringstream out;
  write_model_sweep_svg(out, s);
  const pt::ptree svg = parse_xml(out.str());
  const double width = attr(svg, "width");
  std::vector<const pt::ptree*> texts, lines;
  collect(svg, "text", texts);
  ASSERT_FALSE(texts.empty());
  EXPECT_EQ(texts[0]->get_value<std::string>().rfind("lowp sweep: stories260K, ", 0), 0u) << texts[0]->get_value<std::string>();
  for (const auto* t : texts) {
    const report::Box box = text_box(*t, t->get<double>("<xmlattr>.font-size", 11));
    EXPECT_LE(box.x + box.w, width) << t->get_value<std::string>();
    EXPECT_GE(box.x, 0) << t->get_value<std::string>();
  }
  // Whiskers: horizontal lines in #222; bf16 has two (KLD, ln PPL), mxfp4 none (SE 0 and NaN).
  collect(svg, "line", lines);
  int whiskers = 0;
  for (const auto* l : lines)
    if (l->get<std::string>("<xmlattr>.stroke", "") == "#222" && attr(*l, "y1") == attr(*l, "y2")) ++whiskers;
  EXPECT_EQ(whiskers, 2);
}

TEST(SvgText, TitlesNameTheModelNotItsPath) {
  EXPECT_EQ(report::model_title("../shared/models/tinyllamas/stories260K.gguf"), "stories260K");
  EXPECT_EQ(report::model_title("/x/accuracy/models/shakespeare/model.bin"), "shakespeare");
  EXPECT_EQ(report::model_title("hf/SmolLM-135M/"), "SmolLM-135M");
  EXPECT_EQ(report::model_title("shakespeare"), "shakespeare");
}

TEST(SvgText, WrapAndFitStayWithinTheWidth) {
  const std::string s = "a caption of many words that is far too long for one line of a narrow chart";
  const auto lines = report::wrap(s, 120, 11);
  EXPECT_GT(lines.size(), 2u);
  std::string joined;
  for (const auto& l : lines) {
    EXPECT_LE(report::text_width(l, 11), 120) << l;
    joined += (joined.empty() ? "" : " ") + l;
  }
  EXPECT_EQ(joined, s);
  const std::string cut = report::fit("\u00b2\u00b2\u00b2\u00b2\u00b2\u00b2\u00b2\u00b2\u00b2\u00b2", 40, 11);
  EXPECT_TRUE(cut.ends_with("...")) << cut;
  EXPECT_LE(report::text_width(cut, 11), 40);
  EXPECT_EQ(cut.size() % 2, 1u);  // whole two-byte characters, then "..."
}

}  // namespace

