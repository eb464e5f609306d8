#include "lowp/formats/format.hpp"

#include <cmath>
#include <string>

#include "lowp/formats/codec.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp {

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
  if (!f.is_signed && f.specials == Specials::fnuz) fail("fnuz encodings need a sign bit");
  if (f.specials == Specials::p3109 && f.bits() < 3) fail("a p3109 encoding needs at least 3 bits");
  if (f.ties == Ties::implicit_bit && (f.man_bits != 0 || f.subnormals))
    fail("implicit-bit ties need a format without mantissa bits and without subnormals");
  if (f.specials == Specials::ieee && f.exp_bits < 2) fail("an IEEE-style format needs at least 2 exponent bits");
  if (!f.subnormals && f.specials != Specials::fn && f.specials != Specials::finite)
    fail("formats without subnormals are supported with fn or finite encodings only");
}

}  // namespace lowp
