// The one-row GEMMs' learnt team speeds (work_share.hpp).
#include "work_share.hpp"

#include <cmath>

namespace lowp::quant::detail {

// A virtual CPU can run slower than its sibling for seconds at a time (measured on a 2-vCPU
// VM: one thread's half of a product took up to 1.35x the other's, run after run), and an
// even split then leaves the other waiting. Smaller dynamic chunks cost more than they save:
// each starts with its rows cold, before the next rows' prefetch has begun.
TeamSpeeds::TeamSpeeds() {
  for (auto& v : speed_) v.store(1.0f, std::memory_order_relaxed);
}

void TeamSpeeds::split(std::size_t team, std::size_t total, std::size_t* ends) const {
  float sum = 0, part = 0;
  for (std::size_t t = 0; t < team; ++t) sum += speed(t);
  for (std::size_t t = 0; t + 1 < team; ++t) {
    part += speed(t);
    ends[t] = std::min<std::size_t>(total, static_cast<std::size_t>(std::lround(static_cast<double>(total) * (part / sum))));
  }
  ends[team - 1] = total;
}

void TeamSpeeds::learn(std::size_t team, const std::size_t* units, const double* seconds) {
  double rate[kMax], mean = 0;
  for (std::size_t t = 0; t < team; ++t) {
    if (units[t] == 0 || !(seconds[t] > 0)) return;
    rate[t] = static_cast<double>(units[t]) / seconds[t];
    mean += rate[t] / static_cast<double>(team);
  }
  for (std::size_t t = 0; t < team; ++t) {
    const float now = speed(t), target = static_cast<float>(rate[t] / mean);
    set(t, now + 0.2f * (target - now));
  }
}

void TeamSpeeds::set(std::size_t t, float v) { speed_[t].store(std::clamp(v, 0.25f, 4.0f), std::memory_order_relaxed); }

float TeamSpeeds::speed(std::size_t t) const { return speed_[t].load(std::memory_order_relaxed); }

TeamSpeeds& gemv_team_speeds() {
  static TeamSpeeds s;
  return s;
}

}  // namespace lowp::quant::detail
