// main() of an MPI benchmark binary: every rank runs the benchmarks (their collectives need all
// ranks in lockstep, so each benchmark fixes its iteration count) and rank 0 alone reports.
#pragma once
#include <benchmark/benchmark.h>

#include <vector>

#include "dist/comm.hpp"

namespace lowp::bench {

class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

inline int run_on_every_rank(int argc, char** argv) {
  accuracy::dist::Session mpi(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (accuracy::dist::rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace lowp::bench
