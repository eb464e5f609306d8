// Internal to quant/src/gemm: how the one-row GEMMs (gemv_f32.cpp, gemm_act.cpp) split a
// product's work units (row groups) between their threads: one contiguous run per thread, in
// proportion to the threads' learnt speeds, and stealing from the back once a run is done.
// Which thread computes a unit never changes its bits.
#pragma once
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "lowp/numerics/parallel.hpp"

namespace lowp::quant::detail {

// A thread's share of a product's units still unclaimed, [front, back) packed as
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

// Asked by a run before each unit after its first: whether its thread still owns the next unit
// of its share, which it then claims (share == nullptr: a stolen unit, nothing after it).
// Counts in *done the units claimed.
struct Ahead {
  Share* share;
  std::size_t* done;
  bool go() const {
    std::size_t u;
    if (!share || !share->take_front(1, &u)) return false;
    ++*done;
    return true;
  }
};

// The team's relative speeds, learnt from the one-row products' own timings: thread t of a
// product takes a share of its units in proportion to speed(t) (work_share.cpp says why).
class TeamSpeeds {
 public:
  static constexpr std::size_t kMax = 64;
  TeamSpeeds();
  // The end of thread t's units, [ends[t - 1], ends[t]) of [0, total); ends[team - 1] = total.
  void split(std::size_t team, std::size_t total, std::size_t* ends) const;
  // Moves each speed a fifth of the way to its rate in a product where thread t ran units[t]
  // units in seconds[t] (units per second, over the team's mean); a thread with no units or no
  // measured time: no change.
  void learn(std::size_t team, const std::size_t* units, const double* seconds);
  void set(std::size_t t, float v);  // clamped to [1/4, 4]
  float speed(std::size_t t) const;

 private:
  std::atomic<float> speed_[kMax];
};
TeamSpeeds& gemv_team_speeds();  // the process's, which run_shares splits by and learns

// Units [0, total) on `team` threads (1 <= team <= min(total, TeamSpeeds::kMax)): thread t
// claims the units of its run from the front, calling run(u, end, ahead) for each unit u it
// claimed, where `end` is its run's end and the call may go on with u + 1, u + 2, ... while
// ahead.go(); then it takes the other runs' units from their backs, run(u, u + 1, {nullptr}).
// The threads' times teach gemv_team_speeds(). The first exception a run throws reaches the
// caller.
template <class Run>
void run_shares(std::size_t team, std::size_t total, const Run& run) {
  std::size_t ends[TeamSpeeds::kMax];
  if (team == 1)
    ends[0] = total;
  else
    gemv_team_speeds().split(team, total, ends);
  Share share[TeamSpeeds::kMax];
  for (std::size_t t = 0; t < team; ++t) share[t].reset(t ? ends[t - 1] : 0, ends[t]);
  // Each count on a cache line of its own: side by side, the threads' increments of one line
  // took two thirds of gemm_act's own samples (perf, Zen 3).
  struct alignas(64) Count {
    std::size_t n = 0;
  } done[TeamSpeeds::kMax];
  const auto task = [&](std::size_t t, bool steal) {
    const Ahead own{&share[t], &done[t].n};
    for (std::size_t u; share[t].take_front(1, &u);) {
      ++done[t].n;
      run(u, ends[t], own);
    }
    for (std::size_t i = 1; steal && i < team; ++i)
      for (std::size_t u, o = (t + i) % team; share[o].take_back(&u);) {
        ++done[t].n;
        run(u, u + 1, Ahead{nullptr, &done[t].n});
      }
  };
  // One task runs on the calling thread: a (nested, inactive) team of one costs more than the
  // small products that need only one, such as attention's on each of its threads.
  if (team == 1 || !team_possible()) {
    for (std::size_t t = 0; t < team; ++t) task(t, false);
    return;
  }
  FirstError failure;
  double seconds[TeamSpeeds::kMax] = {};
  std::size_t got = team;
  // Thread t takes share t first (not the first free one), so that its time measures its own
  // speed; a smaller team than asked for (a nested region) takes the shares in turn and
  // learns nothing.
#pragma omp parallel num_threads(static_cast<int>(team))
  {
    const auto n = static_cast<std::size_t>(omp_get_num_threads());
    if (omp_get_thread_num() == 0) got = n;
    for (auto t = static_cast<std::size_t>(omp_get_thread_num()); t < team; t += n) {
      const double start = omp_get_wtime();
      failure.run([&] { task(t, t + n >= team); });
      seconds[t] = omp_get_wtime() - start;
    }
  }
  failure.rethrow();
  if (got != team) return;
  std::size_t units[TeamSpeeds::kMax];
  for (std::size_t t = 0; t < team; ++t) units[t] = done[t].n;
  gemv_team_speeds().learn(team, units, seconds);
}

}  // namespace lowp::quant::detail
