// How the hadamard drivers use the second core: a static split of rows (or column tiles)
// into one contiguous range per thread, so the results never depend on the thread count.
#pragma once
#include <omp.h>

#include <cstddef>

#include "lowp/numerics/parallel.hpp"

namespace lowp::hadamard::detail {

// Work (elements) below which a second thread costs more than it saves.
inline constexpr std::size_t kParallelMin = std::size_t{1} << 16;

// Whether `work` elements are worth a parallel region (not when already inside one).
inline bool want_threads(std::size_t work) { return use_team(work, kParallelMin); }

// Calls f(lo, hi) on contiguous ranges covering [0, count), one per thread when `parallel`
// (static split: deterministic and prefetch-friendly), else once on the whole range.
template <class F>
void split_ranges(std::size_t count, bool parallel, F&& f) {
  if (!parallel || count < 2) {
    f(std::size_t{0}, count);
    return;
  }
#pragma omp parallel
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const auto nt = static_cast<std::size_t>(omp_get_num_threads());
    const std::size_t lo = count * t / nt, hi = count * (t + 1) / nt;
    if (lo < hi) f(lo, hi);
  }
}

}  // namespace lowp::hadamard::detail
