#include "lowp/numerics/parallel.hpp"

#include <omp.h>

#include <utility>

namespace lowp {

bool team_possible() { return omp_get_active_level() < omp_get_max_active_levels(); }

bool use_team(std::size_t work, std::size_t min) { return work >= min && omp_get_max_threads() > 1 && team_possible(); }

void FirstError::keep(std::exception_ptr e) noexcept {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!first_) first_ = std::move(e);
}

int team_size(std::size_t work, std::size_t min, int threads) {
  if (!use_team(work, min)) return 1;
  return threads > 0 ? threads : omp_get_max_threads();
}

}  // namespace lowp
