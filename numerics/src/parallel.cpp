#include "lowp/numerics/parallel.hpp"

#include <omp.h>

namespace lowp {

bool use_team(std::size_t work, std::size_t min) {
  return work >= min && omp_get_max_threads() > 1 && omp_get_active_level() < omp_get_max_active_levels();
}

}  // namespace lowp
