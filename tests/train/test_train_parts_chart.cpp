// The recipe comparison's chart (train/compare.cpp, DIR/loss.svg) on made-up runs: the loss
// curves, and under them a gap-to-fp32 panel whose whiskers are the seed-paired 95% intervals,
// recomputed here from the losses with Student's t for 2 degrees of freedom in closed form and
// read back through the panel's own tick labels (Boost.PropertyTree's XML reader).
#include <gtest/gtest.h>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "train/compare.hpp"

namespace {

namespace pt = boost::property_tree;
namespace fs = std::filesystem;
using namespace lowp::accuracy::train;

void collect(const pt::ptree& t, const std::string& key, std::vector<const pt::ptree*>& out) {
  for (const auto& [k, child] : t) {
    if (k == key) out.push_back(&child);
    collect(child, key, out);
  }
}

double attr(const pt::ptree& e, const std::string& name) { return std::stod(e.get<std::string>("<xmlattr>." + name)); }
std::string sattr(const pt::ptree& e, const std::string& name) { return e.get<std::string>("<xmlattr>." + name, ""); }

TEST(TrainChart, GapPanelWhiskersAreTheSeedPairedIntervals) {
  // Three seeds, evaluations at steps 10, 20, 30; "x" is a little worse than fp32 with noise.
  const double fp32[3][3] = {{3.0, 2.5, 2.2}, {3.1, 2.6, 2.25}, {2.95, 2.45, 2.18}};
  const double x[3][3] = {{3.05, 2.56, 2.24}, {3.12, 2.63, 2.30}, {3.01, 2.47, 2.21}};
  std::vector<RecipeRun> runs = {{"fp32", {}}, {"x", {}}};
  for (int s = 0; s < 3; ++s) {
    SeedRun a{static_cast<std::uint64_t>(s), {}}, b{static_cast<std::uint64_t>(s), {}};
    for (int p = 0; p < 3; ++p) {
      a.result.val_curve.emplace_back(10 * (p + 1), fp32[s][p]);
      b.result.val_curve.emplace_back(10 * (p + 1), x[s][p]);
    }
    a.result.final_val_loss = fp32[s][2];
    b.result.final_val_loss = x[s][2];
    runs[0].seeds.push_back(a);
    runs[1].seeds.push_back(b);
  }
  const fs::path dir = fs::temp_directory_path() / "lowp_train_chart";
  fs::create_directories(dir);
  write_comparison(dir.string(), runs);
  std::ifstream in(dir / "loss.svg");
  pt::ptree doc;
  pt::read_xml(in, doc);
  const pt::ptree& svg = doc.get_child("svg");

  // Two panels: the plot frames (no fill, grey stroke), the gap panel the lower one.
  std::vector<const pt::ptree*> rects, texts, lines;
  collect(svg, "rect", rects);
  std::vector<const pt::ptree*> frames;
  for (const auto* r : rects)
    if (sattr(*r, "fill") == "none" && sattr(*r, "stroke") == "#999") frames.push_back(r);
  ASSERT_EQ(frames.size(), 2u);
  const double gy0 = attr(*frames[1], "y"), gy1 = gy0 + attr(*frames[1], "height");
  // The gap panel's y mapping from two of its tick labels (right-aligned, left of the frame).
  collect(svg, "text", texts);
  std::vector<std::pair<double, double>> ticks;  // (value, baseline y)
  for (const auto* t : texts)
    if (sattr(*t, "text-anchor") == "end" && attr(*t, "y") > gy0 && attr(*t, "y") < gy1 + 8)
      ticks.push_back({std::stod(t->get_value<std::string>()), attr(*t, "y")});
  ASSERT_GE(ticks.size(), 2u);
  const double px_per = (ticks[1].second - ticks[0].second) / (ticks[1].first - ticks[0].first);
  // Whiskers: vertical lines in x's colour (the second series colour) inside the gap panel.
  collect(svg, "line", lines);
  std::vector<std::pair<double, double>> whiskers;  // (x, length in px)
  for (const auto* l : lines)
    if (sattr(*l, "stroke") == "#f58518" && attr(*l, "x1") == attr(*l, "x2") && attr(*l, "y1") > gy0 - 1)
      whiskers.push_back({attr(*l, "x1"), std::fabs(attr(*l, "y2") - attr(*l, "y1"))});
  ASSERT_EQ(whiskers.size(), 3u);
  std::sort(whiskers.begin(), whiskers.end());
  // t(0.975, 2 dof) = (2p - 1) / sqrt(2 p (1 - p)) with p = 0.975.
  const double t2 = 0.95 / std::sqrt(2 * 0.975 * 0.025);
  for (int p = 0; p < 3; ++p) {
    double dm = 0, ref = 0, ss = 0;
    for (int s = 0; s < 3; ++s) dm += (x[s][p] - fp32[s][p]) / 3, ref += fp32[s][p] / 3;
    for (int s = 0; s < 3; ++s) ss += std::pow(x[s][p] - fp32[s][p] - dm, 2);
    const double half_pct = 100 * t2 * std::sqrt(ss / 2) / std::sqrt(3.0) / ref;
    // The drawn length: 2 x half, in px through the tick mapping (coordinates are written with 6
    // significant digits: 0.01 px).
    EXPECT_NEAR(whiskers[static_cast<std::size_t>(p)].second, 2 * half_pct * std::fabs(px_per), 0.02) << "step " << 10 * (p + 1);
  }
  fs::remove_all(dir);
}

}  // namespace
