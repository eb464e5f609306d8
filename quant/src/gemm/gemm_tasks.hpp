// Internal: the float32 GEMM driver's task loop (compiled with OpenMP).
#pragma once
#include <cstddef>

#include "lowp/numerics/parallel.hpp"

namespace lowp::quant::detail {

// Runs body(t) for t in [0, n): on the threads of the enclosing parallel region when `team`,
// else as a plain loop on the calling thread (no OpenMP call: a one-thread region still costs
// microseconds, and the attention heads call small GEMMs thousands of times a step). The
// first exception thrown is kept in `failure`. Wait = false: no barrier at the end (the caller
// synchronizes some other way).
template <bool Wait = true, class F>
void for_tasks(bool team, std::size_t n, FirstError& failure, F&& body) {
  const auto run = [&](std::ptrdiff_t t) { failure.run([&] { body(static_cast<std::size_t>(t)); }); };
  const auto n_ = static_cast<std::ptrdiff_t>(n);
  if (!team) {
    for (std::ptrdiff_t t = 0; t < n_; ++t) run(t);
    return;
  }
  if constexpr (Wait) {
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t t = 0; t < n_; ++t) run(t);
  } else {
#pragma omp for schedule(dynamic, 1) nowait
    for (std::ptrdiff_t t = 0; t < n_; ++t) run(t);
  }
}

}  // namespace lowp::quant::detail
