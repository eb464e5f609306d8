// Round ticks: 1-2-5 steps on linear axes, decades with minor ticks on log axes.
#include "report/axis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace lowp::accuracy::report {

LinearAxis round_axis(double lo, double hi, int max_steps) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (lo > hi) std::swap(lo, hi);
  if (!(hi > lo)) {  // flat: one unit (of the value's own size) around it
    const double u = lo == 0 ? 1 : std::pow(10.0, std::floor(std::log10(std::fabs(lo))));
    lo -= u, hi += u;
  }
  max_steps = std::max(1, max_steps);
  // The smallest 1, 2 or 5 x 10^k whose rounded-out range needs at most max_steps steps; the
  // search starts one decade below the raw step (range / max_steps) so it cannot skip the answer.
  double p = std::pow(10.0, std::floor(std::log10((hi - lo) / max_steps)) - 1);
  for (;; p *= 10)
    for (const double m : {1.0, 2.0, 5.0}) {
      const double step = m * p, a = std::floor(lo / step + 1e-9), b = std::ceil(hi / step - 1e-9);
      if (b - a <= max_steps) return {a * step, b * step, step};
    }
}

std::string tick_number(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, decimals), v);
  // "-0", "-0.00": printf keeps the sign of a value that rounds to zero.
  const std::string_view s = buf;
  const bool minus_zero = s[0] == '-' && s.find_first_not_of("0.", 1) == std::string_view::npos;
  return std::string(minus_zero ? s.substr(1) : s);
}

std::vector<Tick> linear_ticks(const LinearAxis& a) {
  // Decimals of the step: 0.05 -> 2, 2 -> 0 (steps are 1, 2 or 5 x 10^k).
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(a.step) + 1e-9)));
  std::vector<Tick> t;
  const double first = std::ceil(a.lo / a.step - 1e-9), last = std::floor(a.hi / a.step + 1e-9);
  for (double i = first; i <= last; ++i) {
    double v = i * a.step;
    if (std::fabs(v) < a.step * 1e-9) v = 0;  // no -0 nor 1e-17 from accumulated rounding
    t.push_back({v, tick_number(v, decimals)});
  }
  return t;
}

std::string decade_label(int e) {
  if (e >= -3 && e <= 3) return tick_number(std::pow(10.0, e), std::max(0, -e));
  char buf[16];
  std::snprintf(buf, sizeof buf, "1e%+d", e);
  return buf;
}

std::vector<Tick> log_ticks(double e_lo, double e_hi) {
  const int a = static_cast<int>(std::floor(e_lo + 1e-9)), b = static_cast<int>(std::ceil(e_hi - 1e-9));
  const bool few = b - a <= 2;  // short axes: 2 and 5 labelled as well
  std::vector<Tick> t;
  for (int e = a; e <= b; ++e) {
    const double d = std::pow(10.0, e);
    t.push_back({d, decade_label(e)});
    if (e == b) break;
    for (int m = 2; m <= 9; ++m) {
      const bool labelled = few && (m == 2 || m == 5);
      std::string label;
      if (labelled && e >= -3 && e <= 2) label = tick_number(m * d, std::max(0, -e));
      else if (labelled) label = std::to_string(m).append(decade_label(e), 1);  // "1e-5" -> "2e-5"
      t.push_back({m * d, label});
    }
  }
  return t;
}

}  // namespace lowp::accuracy::report
