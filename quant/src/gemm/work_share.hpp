// Internal to quant/src/gemm: a thread's share of a product's work units, which the one-row
// GEMMs (gemv_f32.cpp, gemm_act.cpp) split between their threads.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace lowp::quant::detail {

// A thread's share of a product's units (row groups) still unclaimed, [front, back) packed as
// front | back << 32. Its owner takes units from the front, one pass at a time; a thread done
// with its own share takes others' from the back, so that neither waits for the slower one
// (unit by unit: the owner's next rows, already being prefetched, stay its own).
struct alignas(64) Share {
  std::atomic<std::uint64_t> range;
  void reset(std::size_t front, std::size_t back) { range.store(front | static_cast<std::uint64_t>(back) << 32); }
  // Up to `want` (>= 1) units from the front: the count taken (0 once empty), the first at *first.
  std::size_t take_front(std::size_t want, std::size_t* first) {
    std::uint64_t r = range.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t f = r & 0xFFFFFFFFu, b = r >> 32, n = std::min<std::uint64_t>(want, b - f);
      if (n == 0) return 0;
      if (range.compare_exchange_weak(r, (f + n) | b << 32, std::memory_order_relaxed)) return *first = f, n;
    }
  }
  bool take_back(std::size_t* unit) {
    std::uint64_t r = range.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t f = r & 0xFFFFFFFFu, b = r >> 32;
      if (f == b) return false;
      if (range.compare_exchange_weak(r, f | (b - 1) << 32, std::memory_order_relaxed)) return *unit = b - 1, true;
    }
  }
};

}  // namespace lowp::quant::detail
