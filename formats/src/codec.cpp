#include "lowp/formats/codec.hpp"

#include <cmath>
#include <limits>

#include "codec_rules.hpp"
#include "lowp/numerics/bits.hpp"

namespace lowp {
namespace {

using detail::finish;
using detail::overflow_code;

template <class T>
std::uint32_t encode_integer(const Format& f, T x, const CastOptions& opt, std::uint32_t rand) noexcept {
  if (std::isnan(x)) return 0;
  const bool neg = std::signbit(x);
  std::int64_t v;
  if (std::isinf(x)) {
    v = neg ? f.int_min : f.int_max;
  } else if (x == 0) {
    v = 0;
  } else {
    const Unpacked u = unpack(x);
    const int shift = (Ieee<T>::precision - 1) - u.exp;
    if (u.exp >= 40) {
      v = neg ? f.int_min : f.int_max;  // far beyond any integer format
    } else {
      const auto r = static_cast<std::int64_t>(round_shift(u.sig, shift, opt.round, neg, rand));
      v = neg ? -r : r;
    }
  }
  if (v < f.int_min) v = f.int_min;
  if (v > f.int_max) v = f.int_max;
  return static_cast<std::uint32_t>(v) & f.code_mask();
}

template <class T>
std::uint32_t encode_impl(const Format& f, T x, const CastOptions& opt, std::uint32_t rand) noexcept {
  if (f.kind == Kind::integer) return encode_integer(f, x, opt, rand);
  const bool neg = std::signbit(x);
  if (std::isnan(x)) return detail::nan_input_code(f, neg);
  if (std::isinf(x)) {
    const bool keep = !opt.saturate && (f.has_inf() || f.has_nan());
    return overflow_code(f, neg, keep);
  }
  if (x == 0) {
    // No zero (E8M0): NaN as in ml_dtypes; saturating or without NaN, the smallest value,
    // keeping the sign where the format has one.
    if (!f.has_zero()) return opt.saturate || !f.has_nan() ? finish(f, neg && f.is_signed, 0u) : detail::signed_nan(f, neg);
    return finish(f, neg, 0u);
  }

  const int m = f.man_bits;
  const Unpacked u = unpack(x);
  const int E = u.exp + f.bias;  // biased exponent of x in the target
  int shift = (Ieee<T>::precision - 1) - m;
  int e_field = E;
  // Ties::implicit_bit (round to nearest even only): round as if E = 0 held subnormals, with the
  // parity of the significand r (its implicit 1 for normal results) instead of the code's.
  const bool implicit = f.ties == Ties::implicit_bit && opt.round == Round::nearest_even;
  if (E < 1) {
    if (!f.subnormals && !implicit) {
      if (E < 0) return finish(f, neg, 0u);  // below the smallest value: documented clamp
    } else {
      shift += 1 - E;  // subnormal: the quantum stays at 2^(1 - bias - m)
      e_field = 1;
    }
  }
  const bool odd_base = m == 0 && !implicit && ((e_field - 1) & 1) != 0;  // code = e_field - 1 + r
  const std::uint64_t r = round_shift(u.sig, shift, opt.round, neg, rand, odd_base);
  // r counts quanta including the implicit bit; adding (e_field - 1) << m places it in the
  // code, and a carry out of the mantissa moves to the next binade by itself.
  const std::uint64_t mag64 = (static_cast<std::uint64_t>(e_field) << m) + r - (std::uint64_t{1} << m);
  if (mag64 > f.max_finite_code()) {
    return overflow_code(f, neg, detail::overflow_to_infinity(opt, neg));
  }
  auto mag = static_cast<std::uint32_t>(mag64);
  if (opt.flush_subnormals && f.subnormals && mag < (1u << m)) mag = 0;
  return finish(f, neg, mag);
}

}  // namespace

std::uint32_t encode(const Format& f, float x, const CastOptions& opt, std::uint32_t rand) noexcept {
  return encode_impl(f, x, opt, rand);
}

std::uint32_t encode(const Format& f, double x, const CastOptions& opt, std::uint32_t rand) noexcept {
  return encode_impl(f, x, opt, rand);
}

bool is_nan_code(const Format& f, std::uint32_t code) noexcept {
  code &= f.code_mask();
  if (f.kind == Kind::integer) return false;
  const std::uint32_t mag = code & ~f.sign_bit();
  const std::uint32_t all = (1u << (f.exp_bits + f.man_bits)) - 1;
  switch (f.specials) {
    case Specials::ieee: {
      const std::uint32_t exp_all = ((1u << f.exp_bits) - 1) << f.man_bits;
      return (mag & exp_all) == exp_all && (mag & ~exp_all) != 0;
    }
    case Specials::fn: return mag == all;
    case Specials::fnuz: return code == f.sign_bit();
    case Specials::p3109: return code == f.nan_code();
    case Specials::finite: return false;
  }
  return false;
}

bool is_valid_code(const Format& f, std::uint32_t code) noexcept {
  if (code > f.code_mask()) return false;
  if (f.kind == Kind::integer) {
    const double v = decode(f, code);
    return v >= f.int_min && v <= f.int_max;
  }
  return true;
}

double decode(const Format& f, std::uint32_t code) noexcept {
  code &= f.code_mask();
  if (f.kind == Kind::integer) {
    const int b = f.bits();
    if (f.is_signed && (code >> (b - 1)) != 0) return static_cast<double>(static_cast<std::int64_t>(code) - (std::int64_t{1} << b));
    return static_cast<double>(code);
  }
  // NaN codes keep their sign bit (0xFF of e4m3fn and 0x80 of the fnuz formats are -NaN), as in ml_dtypes.
  if (is_nan_code(f, code)) return std::copysign(std::numeric_limits<double>::quiet_NaN(), (code & f.sign_bit()) ? -1.0 : 1.0);
  const bool neg = (code & f.sign_bit()) != 0;
  const std::uint32_t mag = code & ~f.sign_bit();
  const int m = f.man_bits;
  const int E = static_cast<int>(mag >> m);
  const std::uint32_t M = mag & ((1u << m) - 1);
  double v;
  if (f.inf_code(false) == mag) {
    v = std::numeric_limits<double>::infinity();
  } else if (E == 0 && f.subnormals) {
    v = std::ldexp(static_cast<double>(M), 1 - f.bias - m);
  } else {
    v = std::ldexp(static_cast<double>((1u << m) | M), E - f.bias - m);
  }
  return neg ? -v : v;
}

}  // namespace lowp
