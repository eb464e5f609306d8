// The one SVG chart writer (accuracy/src/report/svg.hpp): read back with Boost.PropertyTree's
// XML reader, an independent parser. The x-y chart puts each point where the axis mapping
// written out in the test says, skips what a log axis cannot show and escapes hostile text; the
// heatmap draws a cell per given colour.
#include <gtest/gtest.h>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "report/svg.hpp"

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
  c.x = {"x", false, 0, 10, 5, "%.0f"};
  c.y = {"y", true, -3, 0};  // 1e-3 .. 1
  report::XySeries s;
  s.label = "s<1>";
  s.points = {{0, 1e-3}, {5, -1}, {5, 1e-2}, {10, 1}, {7, NAN}};  // -1 and NaN cannot be drawn
  s.marker = report::XySeries::Marker::filled;
  s.tips = {"p0", "p1", "p2 <x>", "p3", "p4"};
  c.series.push_back(s);
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
    EXPECT_NEAR(attr(*circles[i], "cx"), x0 + want[i][0] / 10 * w, 1e-3) << i;
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
  m.scale_colours = {report::ramp_colour(0), report::ramp_colour(0.5), report::ramp_colour(1)};
  const pt::ptree svg = parse_xml(report::heatmap(m));
  std::vector<const pt::ptree*> rects;
  collect(svg, "rect", rects);
  ASSERT_EQ(rects.size(), 1u + 2u + 3u);  // background, two cells, the key
  EXPECT_EQ(rects[1]->get<std::string>("<xmlattr>.fill"), "#000000");
  EXPECT_EQ(rects[2]->get<std::string>("title"), "last & <x>");
  // The ramp's ends are viridis' (68, 1, 84) and (253, 231, 37).
  EXPECT_EQ(report::ramp_colour(0), "#440154");
  EXPECT_EQ(report::ramp_colour(1), "#fde725");
  EXPECT_EQ(report::ramp_colour(-1), "#440154");
  EXPECT_EQ(rects[4]->get<std::string>("<xmlattr>.fill"), report::ramp_colour(0.5));
}

TEST(SvgChart, DecadesCoverTheRangeOrFallBack) {
  EXPECT_EQ(report::decades(2e-4, 0.3, {-6, 0}), std::make_pair(-4.0, 0.0));
  EXPECT_EQ(report::decades(1e-3, 1e-3, {-6, 0}), std::make_pair(-3.0, -2.0));  // at least one decade
  EXPECT_EQ(report::decades(INFINITY, 0, {-6, 0}), std::make_pair(-6.0, 0.0));  // nothing positive
}

}  // namespace
