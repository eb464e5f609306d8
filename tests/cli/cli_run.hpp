// Runs the `lowp` program in-process through run_cli, with `input` as stdin.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "lowp/accuracy/cli.hpp"

namespace lowp::test {

struct Result {
  int code;
  std::string out, err;
};

inline Result lowp_run(const std::vector<std::string>& args, const std::string& input = "") {
  std::vector<const char*> argv = {"lowp"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::istringstream in(input);
  std::ostringstream out, err;
  const int code = lowp::run_cli(static_cast<int>(argv.size()), argv.data(), in, out, err);
  return {code, out.str(), err.str()};
}

// A failed run that printed one line to stderr containing `needle`.
inline void expect_one_line_failure(const Result& r, const std::string& needle) {
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

}  // namespace lowp::test
