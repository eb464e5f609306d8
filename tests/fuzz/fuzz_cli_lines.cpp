// `lowp cast` / `lowp decode` in-process: the first line is the command line after `lowp`
// (its first word must be cast or decode; at most 8 words), the rest is stdin. The exit status
// and output are whatever the CLI says; only a crash, a sanitizer report or a second stderr
// line is a finding.
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "lowp/accuracy/cli.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view all = lowp::fuzz::text(data, size);
  const std::size_t nl = all.find('\n');
  const std::string_view first = all.substr(0, nl);
  std::vector<std::string> words = {"lowp"};
  std::istringstream ws{std::string(first)};
  for (std::string w; ws >> w && words.size() <= 9;) words.push_back(w);
  if (words.size() < 2 || (words[1] != "cast" && words[1] != "decode")) return 0;
  std::vector<const char*> argv;
  for (const auto& w : words) argv.push_back(w.c_str());
  std::istringstream in{nl == std::string_view::npos ? std::string() : std::string(all.substr(nl + 1))};
  std::ostringstream out, err;
  lowp::run_cli(static_cast<int>(argv.size()), argv.data(), in, out, err);
  const std::string e = err.str();
  // --help prints a page to stdout; an error is one line on stderr.
  if (!e.empty() && e.find('\n') != e.size() - 1) std::abort();
  return 0;
}
