// Test-side reference for the codec: what a code means and what a cast must give, written
// from the format descriptions (format.hpp) and the contract in codec.hpp, on top of the exact
// rounding of lowp/numerics/oracle.hpp. It never calls the codec it is used to check.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/format.hpp"
#include "lowp/numerics/oracle.hpp"
#include "support/test_support.hpp"

namespace lowp::test {

using oracle::Real;

// The meaning of one code, from the spec formula.
struct CodeMeaning {
  bool nan = false;
  bool inf = false;
  bool negative = false;
  Real magnitude;  // finite codes
};

inline CodeMeaning spec_decode(const Format& f, std::uint32_t code) {
  CodeMeaning r;
  if (f.kind == Kind::integer) {
    const int w = f.man_bits;
    std::int64_t v = code;
    if (f.is_signed && code >= (1u << (w - 1))) v -= std::int64_t{1} << w;
    r.negative = v < 0;
    r.magnitude = Real(v < 0 ? -v : v);
    return r;
  }
  const int e = f.exp_bits, m = f.man_bits;
  const std::uint32_t all = (1u << (e + m)) - 1;  // the magnitude bits
  const std::uint32_t sign = f.is_signed ? 1u << (e + m) : 0u;
  const std::uint32_t mag = code & all;
  const std::uint32_t E = mag >> m, M = mag & ((1u << m) - 1), Eall = (1u << e) - 1;
  r.negative = (code & sign) != 0;
  switch (f.specials) {
    case Specials::ieee:
      if (E == Eall) (M == 0 ? r.inf : r.nan) = true;
      break;
    case Specials::fn: r.nan = mag == all; break;
    case Specials::fnuz: r.nan = code == sign; break;
    case Specials::p3109:  // signed: NaN = sign only, Inf = top magnitude; unsigned: NaN = top, Inf below
      r.nan = f.is_signed ? code == sign : mag == all;
      r.inf = mag == (f.is_signed ? all : all - 1);
      break;
    case Specials::finite: break;
  }
  if (r.nan || r.inf) return r;
  if (E == 0 && f.subnormals)
    r.magnitude = ldexp(Real(M), 1 - f.bias - m);
  else
    r.magnitude = ldexp(Real((1u << m) + M), static_cast<int>(E) - f.bias - m);
  return r;
}

// Facts of a format derived from spec_decode and the descriptor.
struct Spec {
  oracle::System system;
  bool has_inf = false, has_nan = false, has_zero = true, has_negative_zero = false;
  std::uint32_t nan_code = 0;  // the canonical NaN: positive, quiet (top mantissa bit) for IEEE
  Real max, min_positive, min_normal;
  Real int_min, int_max;       // integer formats
};

inline Spec make_spec(const Format& f) {
  Spec s;
  if (f.kind == Kind::integer) {
    s.system = oracle::System::integers();
    s.int_min = Real(f.int_min);
    s.int_max = Real(f.int_max);
    s.max = s.int_max;
    s.min_positive = s.min_normal = Real(1);
    return s;
  }
  const int e = f.exp_bits, m = f.man_bits;
  const int emin = f.subnormals ? 1 - f.bias : -f.bias;
  s.system = oracle::System::floating(m + 1, emin, f.subnormals);
  s.has_inf = f.specials == Specials::ieee || f.specials == Specials::p3109;
  s.has_nan = (f.specials == Specials::ieee && m > 0) || f.specials == Specials::fn ||
              f.specials == Specials::fnuz || f.specials == Specials::p3109;
  s.has_zero = f.subnormals;
  s.has_negative_zero = f.is_signed && f.subnormals && f.specials != Specials::fnuz && f.specials != Specials::p3109;
  const std::uint32_t all = (1u << (e + m)) - 1;
  switch (f.specials) {
    case Specials::ieee: s.nan_code = m > 0 ? (((1u << e) - 1) << m) | (1u << (m - 1)) : 0; break;
    case Specials::fn: s.nan_code = all; break;
    case Specials::fnuz: s.nan_code = 1u << (e + m); break;
    case Specials::p3109: s.nan_code = f.is_signed ? 1u << (e + m) : all; break;
    case Specials::finite: break;
  }
  for (std::uint32_t mag = all;; --mag) {  // the largest finite magnitude code
    const CodeMeaning c = spec_decode(f, mag);
    if (!c.nan && !c.inf) {
      s.max = c.magnitude;
      break;
    }
  }
  s.min_positive = spec_decode(f, f.subnormals ? 1u : 0u).magnitude;
  s.min_normal = ldexp(Real(1), emin);
  return s;
}

// Ties::implicit_bit under nearest-even, from its definition in format.hpp (E8M0 as ml_dtypes
// rounds it): v in [2^k, 2^(k+1)) at or above 2^(1 - bias) gives 2^(k+1) from 1.5 * 2^k on, else
// 2^k; below 2^(1 - bias), values above 2^-bias give 2^(1 - bias), the rest 2^-bias.
inline Real implicit_bit_nearest(const Format& f, double v) {
  const Real x(v), min_normal = ldexp(Real(1), 1 - f.bias);
  if (x < min_normal) return x > ldexp(Real(1), -f.bias) ? min_normal : ldexp(Real(1), -f.bias);
  const Real lo = ldexp(Real(1), std::ilogb(v));
  return x >= lo * 3 / 2 ? lo * 2 : lo;
}

// What a cast must produce: NaN, or a value whose sign (of zero and infinity too) matters.
struct Expected {
  bool nan = false;
  double value = 0;
  bool nan_negative = false;  // a NaN's sign (ml_dtypes/PyTorch): kept where the format has a -NaN
};

// The code of a NaN of a sign: the canonical NaN, with the sign bit for a negative one. In
// fnuz/p3109 the canonical NaN is the sign-only code already; unsigned formats have no sign bit.
inline std::uint32_t expected_nan_code(const Format& f, const Spec& s, bool negative) {
  const std::uint32_t sign = f.is_signed ? 1u << (f.exp_bits + f.man_bits) : 0u;
  return s.nan_code | (negative ? sign : 0u);
}

inline bool toward_infinity(Round mode, bool negative) {
  switch (mode) {
    case Round::nearest_even:
    case Round::nearest_away:
    case Round::stochastic: return true;  // stochastic: judged on the rounded result, above max here
    case Round::toward_pos: return !negative;
    case Round::toward_neg: return negative;
    case Round::toward_zero:
    case Round::odd: return false;
  }
  return true;
}

// An input held exactly, with its neighbours in the format's system (computed once, shared by
// every mode and option).
struct Prepared {
  double x = 0;  // float inputs are widened exactly
  oracle::Bracket b;
};

inline Prepared prepare(const Spec& s, double x) {
  Prepared p;
  p.x = x;
  if (std::isfinite(x) && x != 0) p.b = oracle::bracket(s.system, Real(x));
  return p;
}

// The contract of codec.hpp, applied to the oracle's exactly rounded magnitude.
inline Expected expected_cast(const Format& f, const Spec& s, const Prepared& p, const CastOptions& o,
                              std::uint32_t rand) {
  const double x = p.x;
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (f.kind == Kind::integer) {  // round to an integer, clamp; NaN -> 0
    if (std::isnan(x)) return {false, 0.0};
    if (std::isinf(x)) return {false, x < 0 ? s.int_min.convert_to<double>() : s.int_max.convert_to<double>()};
    if (x == 0) return {false, 0.0};
    Real v = oracle::round_magnitude(p.b, o.round, rand);
    if (p.b.negative) v = -v;
    if (v < s.int_min) v = s.int_min;
    if (v > s.int_max) v = s.int_max;
    return {false, v == 0 ? 0.0 : v.convert_to<double>()};
  }
  // A NaN of the input's sign, or for formats without NaN +0, which a format without zero
  // clamps up to its smallest.
  const auto nan_or_zero = [&](bool negative) {
    return Expected{s.has_nan, s.has_nan || s.has_zero ? 0.0 : s.min_positive.convert_to<double>(), negative};
  };
  if (std::isnan(x)) {
    // ml_dtypes' rule for formats without NaN (FP6, FP4): its stand-in NaN is the code of -0,
    // and a negative NaN negates it to +0.
    if (!s.has_nan && s.has_negative_zero) return {false, std::signbit(x) ? 0.0 : -0.0};
    return nan_or_zero(std::signbit(x));
  }
  bool neg = std::signbit(x);
  // No zero (E8M0): a zero input is NaN as in ml_dtypes, unless saturating (then the smallest).
  if (x == 0 && !s.has_zero && s.has_nan && !o.saturate) return nan_or_zero(neg);
  if (!f.is_signed && x == 0) neg = false;  // unsigned: -0 gives +0
  Real mag;
  bool is_inf = false;
  if (std::isinf(x)) {
    if (!o.saturate && s.has_inf) is_inf = true;
    else if (!o.saturate && s.has_nan) return nan_or_zero(neg);
    else mag = s.max;  // saturating, or a format with neither Inf nor NaN
  } else if (x != 0) {
    if (f.ties == Ties::implicit_bit && o.round == Round::nearest_even) {
      mag = implicit_bit_nearest(f, std::fabs(x));
    } else {
      mag = oracle::round_magnitude(p.b, o.round, rand);
    }
    if (mag > s.max) {
      const bool away = !o.saturate && toward_infinity(o.round, neg);
      if (away && s.has_inf) is_inf = true;
      else if (away && s.has_nan) return nan_or_zero(neg);
      else mag = s.max;
    }
    if (!is_inf && o.flush_subnormals && s.has_zero && mag < s.min_normal) mag = 0;
  }
  if (!is_inf && !s.has_zero && mag < s.min_positive) mag = s.min_positive;  // no zero: clamp up
  if (!is_inf && mag == 0) return {false, neg && s.has_negative_zero ? -0.0 : 0.0};
  if (neg && !f.is_signed) return nan_or_zero(neg);  // unsigned, negative nonzero
  const double v = is_inf ? inf : mag.convert_to<double>();
  return {false, neg ? -v : v};
}

// Encodes x, decodes the code and compares with expected_cast. Returns "" when right, else
// a one-line description of the failure.
template <class T>
std::string check_cast(const Format& f, const Spec& s, const Prepared& p, T x, const CastOptions& o,
                       std::uint32_t rand = 0) {
  const std::uint32_t code = encode(f, x, o, rand);
  const Expected e = expected_cast(f, s, p, o, rand);
  const double got = decode(f, code);
  bool ok = code <= f.code_mask();
  if (e.nan)
    ok = ok && std::isnan(got) && code == expected_nan_code(f, s, e.nan_negative);
  else
    ok = ok && !std::isnan(got) && got == e.value && std::signbit(got) == std::signbit(e.value);
  if (ok) return {};
  char buf[256];
  std::snprintf(buf, sizeof buf, "x=%a (%s) mode=%d sat=%d flush=%d rand=%08x: code=0x%x decodes to %a, expected %s%a",
                static_cast<double>(x), sizeof(T) == 4 ? "float" : "double", static_cast<int>(o.round),
                o.saturate, o.flush_subnormals, rand, code, got, e.nan ? "NaN " : "", e.value);
  return buf;
}

inline constexpr Round kAllModes[] = {Round::nearest_even, Round::nearest_away, Round::toward_zero,
                                      Round::toward_pos, Round::toward_neg, Round::stochastic, Round::odd};

}  // namespace lowp::test
