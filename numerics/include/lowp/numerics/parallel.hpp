// When a loop opens an OpenMP team, and the same loop without one. libgomp charges 1-3 us for
// a region that runs on one thread (an `if` clause that is false, or a region nested inside an
// active one); loops called thousands of times a step (per piece, per attention head) would pay
// it in full, so below their threshold they run as plain loops. The templates are for sources
// compiled with OpenMP.
#pragma once
#include <cstddef>
#include <exception>
#include <mutex>

namespace lowp {

// The first exception that any body of a parallel loop throws, kept to be rethrown after the
// loop: none may leave an OpenMP region, and every thread still runs its share (so that all meet
// at the region's barriers). One per loop, shared by its threads.
class FirstError {
 public:
  // Calls f(); an exception it throws is kept if it is the loop's first, else dropped.
  template <class F>
  void run(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      keep(std::current_exception());
    }
  }
  // Throws the kept exception, if any (call after the loop).
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  void keep(std::exception_ptr e) noexcept;
  std::exception_ptr first_;
  std::mutex mu_;
};

// Whether a region opened here can have more than one thread: not inside a team whose nesting
// would give it one (past OpenMP's active levels).
bool team_possible();

// Whether `work` (elements) opens a team here: at least `min`, more than one thread allowed,
// and team_possible().
bool use_team(std::size_t work, std::size_t min);

// The threads a loop of `work` elements gets: `threads` (0: OpenMP's default) when
// use_team(work, min), else 1.
int team_size(std::size_t work, std::size_t min, int threads = 0);

// body(i) for i in [0, n): split statically over a team of `threads` when that is more than
// one, else in order on the calling thread.
template <class F>
void parallel_for(std::size_t n, int threads, F&& body) {
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::size_t i = 0; i < n; ++i) body(i);
}

// The sum of body(i) (counts) for i in [0, n), run as parallel_for runs it.
template <class F>
std::size_t parallel_count(std::size_t n, int threads, F&& body) {
  std::size_t total = 0;
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) total += body(i);
    return total;
  }
#pragma omp parallel for schedule(static) num_threads(threads) reduction(+ : total)
  for (std::size_t i = 0; i < n; ++i) total += body(i);
  return total;
}

}  // namespace lowp
