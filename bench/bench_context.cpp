// Linked into every Google Benchmark binary: its JSON context (--benchmark_out) names the CPU
// model and the kernels lowp picks on it, which Google Benchmark's own context (host, CPU
// count, clock, caches, load) lacks. scripts/results puts them on each table's machine line.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "lowp/numerics/cpu.hpp"

namespace {

// The first "key : value" line of /proc/cpuinfo with this key ("unknown" elsewhere).
std::string cpuinfo(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || line.compare(0, key.size(), key) != 0) continue;
    if (line.find_first_not_of(" \t", key.size()) != colon) continue;  // "model" vs "model name"
    return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

const bool registered = [] {
  benchmark::AddCustomContext("lowp_best_isa", std::string(lowp::isa_name(lowp::best_isa())));
  benchmark::AddCustomContext("cpu_model", cpuinfo("model name") + " (family " + cpuinfo("cpu family") +
                                               ", model " + cpuinfo("model") + ")");
#ifdef __clang__
  benchmark::AddCustomContext("compiler", "Clang " __clang_version__);
#else
  benchmark::AddCustomContext("compiler", "GCC " __VERSION__);
#endif
  return true;
}();

}  // namespace
