#include "lowp/formats/format.hpp"

#include <cmath>
#include <string>

#include "lowp/formats/codec.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp {

int Format::bits() const noexcept {
  if (kind == Kind::integer) return man_bits;
  return (is_signed ? 1 : 0) + exp_bits + man_bits;
}

bool Format::has_negative_zero() const noexcept {
  return kind == Kind::floating && is_signed && subnormals &&
         specials != Specials::fnuz && specials != Specials::p3109;
}

std::uint32_t Format::max_finite_code() const noexcept {
  if (kind == Kind::integer) return static_cast<std::uint32_t>(int_max);
  const std::uint32_t all = (1u << (exp_bits + man_bits)) - 1;  // every magnitude bit set
  switch (specials) {
    case Specials::ieee: return (((1u << exp_bits) - 1) << man_bits) - 1;
    case Specials::fn:
    case Specials::p3109: return all - 1;
    case Specials::fnuz:
    case Specials::finite: return all;
  }
  return all;
}

std::optional<std::uint32_t> Format::nan_code() const noexcept {
  if (kind == Kind::integer) return std::nullopt;
  switch (specials) {
    case Specials::ieee:
      if (man_bits == 0) return std::nullopt;  // the all-ones exponent holds only Inf
      return (((1u << exp_bits) - 1) << man_bits) | (1u << (man_bits - 1));
    case Specials::fn: return (1u << (exp_bits + man_bits)) - 1;
    case Specials::fnuz:
    case Specials::p3109: return 1u << (bits() - 1);
    case Specials::finite: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::uint32_t> Format::inf_code(bool negative) const noexcept {
  const std::uint32_t s = negative ? sign_bit() : 0u;
  if (kind == Kind::integer) return std::nullopt;
  if (specials == Specials::ieee) return s | (((1u << exp_bits) - 1) << man_bits);
  if (specials == Specials::p3109) return s | ((1u << (exp_bits + man_bits)) - 1);
  return std::nullopt;
}

double Format::max_finite() const noexcept { return decode(*this, max_finite_code()); }

double Format::min_normal() const noexcept {
  if (kind == Kind::integer) return 1.0;
  return std::ldexp(1.0, (subnormals ? 1 : 0) - bias);
}

double Format::min_subnormal() const noexcept {
  if (kind == Kind::integer) return 1.0;
  if (!subnormals || man_bits == 0) return min_normal();
  return std::ldexp(1.0, 1 - bias - man_bits);
}

Format minifloat(int exp_bits, int man_bits, Specials specials, bool is_signed,
                 std::optional<int> bias, bool subnormals) {
  Format f;
  f.kind = Kind::floating;
  f.is_signed = is_signed;
  f.exp_bits = exp_bits;
  f.man_bits = man_bits;
  // The default bias only for an exponent width validate() accepts (no out-of-range shift).
  f.bias = bias ? *bias : (exp_bits >= 1 && exp_bits <= 8 ? (1 << (exp_bits - 1)) - 1 : 0);
  f.specials = specials;
  f.subnormals = subnormals;
  validate(f);
  return f;
}

Format integer_format(int bits, bool is_signed, bool symmetric) {
  Format f;
  f.kind = Kind::integer;
  f.is_signed = is_signed;
  f.man_bits = bits;
  f.specials = Specials::finite;
  if (bits < 2 || bits > 16) validate(f);  // throws before any out-of-range shift
  if (is_signed) {
    f.int_max = (1 << (bits - 1)) - 1;
    f.int_min = symmetric ? -f.int_max : -f.int_max - 1;
  } else {
    f.int_max = (1 << bits) - 1;
    f.int_min = 0;
  }
  validate(f);
  return f;
}

void validate(const Format& f) {
  auto fail = [](const std::string& what) { throw Error("invalid format: " + what); };
  if (f.kind == Kind::integer) {
    if (f.man_bits < 2 || f.man_bits > 16) fail("integer width " + std::to_string(f.man_bits) + " not in 2..16");
    return;
  }
  if (f.exp_bits < 1 || f.exp_bits > 8) fail("exponent bits " + std::to_string(f.exp_bits) + " not in 1..8");
  if (f.man_bits < 0 || f.man_bits > 23) fail("mantissa bits " + std::to_string(f.man_bits) + " not in 0..23");
  if (f.bias < -200 || f.bias > 400) fail("bias " + std::to_string(f.bias) + " not in -200..400");
  if (!f.is_signed && (f.specials == Specials::fnuz || f.specials == Specials::p3109))
    fail("fnuz and p3109 encodings need a sign bit");
  if (f.specials == Specials::ieee && f.exp_bits < 2) fail("an IEEE-style format needs at least 2 exponent bits");
  if (!f.subnormals && f.specials != Specials::fn && f.specials != Specials::finite)
    fail("formats without subnormals are supported with fn or finite encodings only");
}

}  // namespace lowp
