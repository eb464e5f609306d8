// numerics/parallel.hpp: when a loop opens an OpenMP team (the threshold, more than one thread,
// not inside a team that would give it one thread), and that parallel_for / parallel_count visit
// every index once with and without a team, on how many threads; and that FirstError keeps the
// first exception its loop's bodies throw, of its own type, while every body still runs.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "lowp/numerics/parallel.hpp"

namespace lowp {
namespace {

TEST(Parallel, UseTeamFromItsThresholdOnMoreThanOneThreadOutsideATeam) {
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "one OpenMP thread: use_team is always false here";
  EXPECT_FALSE(use_team(99, 100));
  EXPECT_TRUE(use_team(100, 100));
  bool inside = true;
#pragma omp parallel num_threads(2)
  {
#pragma omp master
    inside = use_team(1000, 100);  // a nested team would be one thread
  }
  EXPECT_FALSE(inside);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  EXPECT_FALSE(use_team(1000, 100));
  omp_set_num_threads(before);
}

TEST(Parallel, ForAndCountVisitEveryIndexOnceWithAndWithoutATeam) {
  for (const int team : {1, 2}) {
    std::vector<std::atomic<int>> seen(1001);
    std::atomic<int> threads_seen{0};
    parallel_for(seen.size(), team, [&](std::size_t i) {
      seen[i].fetch_add(1);
      if (i == 0) threads_seen = omp_get_num_threads();
    });
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << i << " on " << team << " threads";
    EXPECT_EQ(threads_seen.load(), team);
    EXPECT_EQ(parallel_count(1001, team, [](std::size_t i) { return i % 3; }), std::size_t{333 * 3 + 0 + 1})
        << team << " threads";
  }
  EXPECT_EQ(parallel_count(0, 2, [](std::size_t) { return std::size_t{1}; }), 0u);
  EXPECT_EQ(team_size(99, 100, 2), 1);
  EXPECT_EQ(team_size(100, 100, 3), omp_get_max_threads() > 1 ? 3 : 1);
}

TEST(Parallel, FirstErrorRethrowsTheFirstThrownAfterEveryBodyRan) {
  FirstError none;
  none.run([] {});
  EXPECT_NO_THROW(none.rethrow());
  for (const int team : {1, 2}) {
    FirstError err;
    std::atomic<int> ran{0};
    parallel_for(1000, team, [&](std::size_t i) {
      err.run([&] {
        ++ran;
        if (i % 7 == 3) throw std::runtime_error(std::to_string(i));
      });
    });
    EXPECT_EQ(ran.load(), 1000) << team << " threads";
    try {
      err.rethrow();
      ADD_FAILURE() << "nothing rethrown on " << team << " threads";
    } catch (const std::runtime_error& e) {
      const int i = std::stoi(e.what());
      EXPECT_EQ(i % 7, 3) << team << " threads";
      if (team == 1) {
        EXPECT_EQ(i, 3) << "in order on one thread, the first thrown is index 3's";
      }
    }
  }
  FirstError other;  // not a std::exception: kept as it is
  other.run([] { throw 42; });
  other.run([] { throw std::logic_error("second"); });
  EXPECT_THROW(other.rethrow(), int);
}

}  // namespace
}  // namespace lowp
