// Chart axes (private to lowp_accuracy): round tick values and their labels, shared by every
// chart of report/svg.hpp so that no chart prints 0.1234 or "-0" on an axis.
#pragma once
#include <string>
#include <vector>

namespace lowp::accuracy::report {

struct Tick {
  double v = 0;       // data value (a log axis: the value, not its exponent)
  std::string label;  // empty: a minor tick, drawn without a label
};

// A linear axis over [lo, hi] rounded out to whole steps of 1, 2 or 5 x 10^k, the smallest such
// step giving at most `max_steps` steps. A flat or empty range is widened to one unit around it.
struct LinearAxis {
  double lo = 0, hi = 1, step = 1;
};
LinearAxis round_axis(double lo, double hi, int max_steps = 5);
// The ticks at the whole multiples of the step in [lo, hi] (all of lo, lo + step, ..., hi on a
// rounded axis), labelled with the step's decimals.
std::vector<Tick> linear_ticks(const LinearAxis& a);

// A log10 axis over the whole decades [e_lo, e_hi] (exponents): a labelled tick per decade and
// unlabelled minor ticks at 2..9 x 10^e; over one or two decades 2 and 5 are labelled too.
std::vector<Tick> log_ticks(double e_lo, double e_hi);

// v with `decimals` digits after the point, never "-0" (a zero that rounds from below is 0).
std::string tick_number(double v, int decimals);
// 10^e for an integer e: "0.001" .. "1000" in decimal, "1e-5" / "1e+6" beyond.
std::string decade_label(int e);

}  // namespace lowp::accuracy::report
