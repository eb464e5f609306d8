// Internal: the task loop the float32 GEMM and GEMV drivers share (compiled with OpenMP).
#pragma once
#include <cstddef>

#include "lowp/numerics/error.hpp"

namespace lowp::quant::detail {

// Runs body(t) for t in [0, n) on the threads of the enclosing parallel region; the first
// lowp::Error thrown is kept in `failure` (exceptions must not leave an OpenMP region).
template <class F>
void for_tasks(std::size_t n, bool& failed, Error& failure, F&& body) {
#pragma omp for schedule(dynamic, 1)
  for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(n); ++t) {
    try {
      body(static_cast<std::size_t>(t));
    } catch (const Error& e) {
#pragma omp critical(lowp_gemm_f32_error)
      {
        failed = true;
        failure = e;
      }
    }
  }
}

}  // namespace lowp::quant::detail
