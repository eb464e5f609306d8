// Runs the `lowp` program in-process through run_cli, with `input` as stdin.
#pragma once
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

}  // namespace lowp::test
