// `lowp search` and `lowp sweep --sensitivity` in-process on lowp's own byte-level model
// (--model shakespeare): the one-line errors (unknown spec, budget below the cheapest menu
// choice, evaluation text that overlaps the calibration text) and a small search end to end.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::test::lowp_run;

fs::path temp_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  const fs::path d = fs::temp_directory_path() / ("lowp_cli_search_" + std::to_string(getpid()) + "_" + info->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string read(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

const std::string kCalib =
    "First Citizen: Before we proceed any further, hear me speak. All: Speak, speak. First Citizen: You are all "
    "resolved rather to die than to famish?\n";
const std::string kEval =
    "MENENIUS: Either you must confess yourselves wondrous malicious, or be accused of folly. I shall tell you a "
    "pretty tale.\n";

void expect_usage(const lowp::test::Result& r, const std::string& part) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("lowp search: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
}

TEST(CliSearch, BadInputIsOneLine) {
  const fs::path d = temp_dir();
  write(d / "calib.txt", kCalib);
  write(d / "eval.txt", kEval);
  write(d / "overlap.txt", kEval + kCalib.substr(10, 90));
  const std::vector<std::string> common = {"search", "--model", "shakespeare", "--text", (d / "calib.txt").string(),
                                           "--out", (d / "r.txt").string(), "--ctx", "64"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return lowp_run(a);
  };
  expect_usage(with({"--menu", "int4,nope", "--budget", "6"}), "nope");
  expect_usage(with({"--menu", "int4,int8", "--budget", "3"}), "below the cheapest menu choice");
  expect_usage(with({"--menu", "int4,int8", "--budget", "x"}), "not a positive number");
  expect_usage(with({"--menu", "int4,int8", "--budget", "6", "--eval", (d / "calib.txt").string()}),
               "calibration");
  expect_usage(with({"--menu", "int4,int8", "--budget", "6", "--eval", (d / "overlap.txt").string()}),
               "overlaps the calibration text");
  EXPECT_FALSE(fs::exists(d / "r.txt"));
  fs::remove_all(d);
}

TEST(CliSearch, WritesARecipeThatEvalReads) {
  const fs::path d = temp_dir();
  write(d / "calib.txt", kCalib);
  write(d / "eval.txt", kEval);
  const auto r = lowp_run({"search", "--model", "shakespeare", "--text", (d / "calib.txt").string(), "--menu",
                           "int4,int8", "--budget", "5,7", "--eval", (d / "eval.txt").string(), "--out",
                           (d / "r.txt").string(), "--plot", (d / "p.svg").string(), "--ctx", "64", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("predicted KLD"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("uniform int8"), std::string::npos) << r.out;
  const std::string recipe = read(d / "r-5.txt");
  EXPECT_NE(recipe.find("layer.0.weights.wq = "), std::string::npos) << recipe;
  EXPECT_TRUE(fs::exists(d / "r-7.txt"));
  EXPECT_NE(read(d / "p.svg").find("</svg>"), std::string::npos);
  const auto e = lowp_run({"eval", "--model", "shakespeare", "--text", (d / "eval.txt").string(), "--recipe",
                           (d / "r-5.txt").string(), "--ctx", "64", "--threads", "1"});
  EXPECT_EQ(e.code, 0) << e.err;
  fs::remove_all(d);
}

TEST(CliSearch, SweepSensitivityWritesItsFiles) {
  const fs::path d = temp_dir();
  write(d / "calib.txt", kCalib);
  const auto r = lowp_run({"sweep", "--model", "shakespeare", "--text", (d / "calib.txt").string(), "--sensitivity",
                           "int8", "--ctx", "64", "--threads", "1", "--csv", (d / "s.csv").string(), "--json",
                           (d / "s.json").string(), "--plot", (d / "s.svg").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = read(d / "s.csv");
  EXPECT_EQ(csv.rfind("layer,kind,tensor,spec,kld,dlnppl,", 0), 0u) << csv.substr(0, 200);
  EXPECT_NE(csv.find("\n0,weight,weights.wq,int8,"), std::string::npos);
  EXPECT_NE(csv.find("\n-1,weight,weights.classifier,int8,"), std::string::npos);
  EXPECT_NE(read(d / "s.json").find("\"rows\": ["), std::string::npos);
  EXPECT_NE(read(d / "s.svg").find("</svg>"), std::string::npos);
  const auto bad = lowp_run({"sweep", "--model", "shakespeare", "--text", (d / "calib.txt").string(), "--sensitivity",
                             "nope"});
  EXPECT_EQ(bad.code, 2);
  fs::remove_all(d);
}

}  // namespace
