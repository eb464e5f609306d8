// Exact reference rounding for tests, on Boost.Multiprecision. Never used on hot paths.
//
// An algorithm independent of round_shift/unpack/the codec: the input is held exactly as a
// binary float, the quantum of its binade is a power of two, and the two neighbours and the
// discarded fraction come from floor() of an exact scaling. Only the rounding step lives here;
// what a format does with the result (overflow, NaN, signed zero...) is the tests' business.
#pragma once
#include <algorithm>
#include <cstdint>

#include <boost/multiprecision/cpp_bin_float.hpp>

#include "lowp/numerics/rounding.hpp"  // the Round enum only

namespace lowp::oracle {

namespace mp = boost::multiprecision;

// 128 significant bits with a wide exponent: exact for every float, double, uint64 and for
// the scaled values, neighbours, midpoints and fractions formed from them below. Fixed size:
// no allocation.
using Real = mp::number<mp::cpp_bin_float<128, mp::digit_base_2, void, std::int32_t, -30000, 30000>,
                        mp::et_off>;

// A binary number system with no largest value. Values in binade e (2^e <= v < 2^(e+1)) are
// multiples of the quantum 2^(max(e, emin) - (precision - 1)) when `subnormals` (below 2^emin
// the quantum stays 2^(emin - precision + 1), down to an exact zero), or of
// 2^(e - precision + 1) for every e otherwise (the system is then unbounded below too).
// An integer system has the fixed quantum 1.
struct System {
  int precision = 1;  // significand bits including the leading one
  int emin = 0;       // exponent of the smallest normal binade
  bool subnormals = true;
  bool integer = false;

  static System floating(int precision, int emin, bool subnormals) { return {precision, emin, subnormals, false}; }
  static System integers() { return {1, 0, true, true}; }
};

// The representable neighbours of a magnitude |x|.
struct Bracket {
  bool negative = false;
  Real lo, hi;               // lo <= |x| <= hi, consecutive values of the system (equal when exact)
  bool exact = true;
  int cmp_half = 0;          // sign of (|x| - lo) / quantum - 1/2
  std::uint32_t frac32 = 0;  // floor((|x| - lo) / quantum * 2^32)
  bool lo_odd = false;       // parity of lo's code: its rank among the system's values >= 0
};

inline bool is_odd_integer(const Real& k) { return floor(ldexp(k, -1)) != ldexp(k, -1); }

inline Bracket bracket(const System& s, const Real& x) {
  Bracket b;
  b.negative = x < 0;
  const Real a = abs(x);
  if (a == 0) return b;  // lo = hi = 0
  int qexp = 0;          // quantum = 2^qexp
  int e = 0;             // binade of a
  if (!s.integer) {
    int fe = 0;
    frexp(a, &fe);  // a = f * 2^fe with f in [1/2, 1)
    e = fe - 1;
    qexp = (s.subnormals ? std::max(e, s.emin) : e) - (s.precision - 1);
  }
  const Real t = ldexp(a, -qexp);
  const Real k = floor(t);
  const Real frac = t - k;
  b.lo = ldexp(k, qexp);
  b.exact = frac == 0;
  b.hi = b.exact ? b.lo : ldexp(k + 1, qexp);
  b.cmp_half = frac < 0.5 ? -1 : (frac == 0.5 ? 0 : 1);
  b.frac32 = static_cast<std::uint32_t>(floor(ldexp(frac, 32)));
  // rank(lo): with subnormals, k counts the values below 2^emin and every binade above adds
  // 2^(p-1); without, the binade 2^emin starts at rank 0. Only the parity is needed, and for
  // p >= 2 the binade offsets are even, so it is the parity of k; for p = 1 (no mantissa bits)
  // the rank is the exponent offset.
  bool odd = is_odd_integer(k);
  if (!s.integer && s.precision == 1 && k != 0) {
    const int offset = e - s.emin + (s.subnormals ? 1 : 0);  // k == 1 here
    odd = (offset & 1) != 0;
  }
  b.lo_odd = odd;
  return b;
}

// The magnitude |x| rounds to in `mode` (`rand` feeds Round::stochastic), with no upper bound.
// Stochastic: up iff floor(f * 2^32) + rand >= 2^32; odd: the neighbour with an odd code.
inline const Real& round_magnitude(const Bracket& b, Round mode, std::uint32_t rand = 0) {
  if (b.exact) return b.lo;
  bool up = false;
  switch (mode) {
    case Round::nearest_even: up = b.cmp_half > 0 || (b.cmp_half == 0 && b.lo_odd); break;
    case Round::nearest_away: up = b.cmp_half >= 0; break;
    case Round::toward_zero: up = false; break;
    case Round::toward_pos: up = !b.negative; break;
    case Round::toward_neg: up = b.negative; break;
    case Round::stochastic: up = std::uint64_t{b.frac32} + rand >= (std::uint64_t{1} << 32); break;
    case Round::odd: up = !b.lo_odd; break;
  }
  return up ? b.hi : b.lo;
}

}  // namespace lowp::oracle
