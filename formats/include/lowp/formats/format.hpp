// A number format is a value: a small descriptor that drives one generic codec.
//
// Floating formats: value = (-1)^s * 2^(E - bias) * (1 + M / 2^man_bits) for a biased exponent
// field E >= 1 (or E >= 0 when there are no subnormals), and 2^(1 - bias) * M / 2^man_bits for
// E = 0 (subnormals and zero). `specials` says which top codes are not finite numbers.
// Integer formats: the code is a two's-complement (or unsigned) integer in [int_min, int_max].
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace lowp {

enum class Specials : std::uint8_t {
  ieee,    // exponent field all ones: M == 0 is +-Inf, M != 0 is NaN
  fn,      // no Inf; only the all-ones magnitude (S.1111.111) is NaN   (OCP E4M3, E8M0, UE4M3)
  fnuz,    // no Inf, no -0; the code with only the sign bit set is the single NaN (AMD FNUZ)
  p3109,   // IEEE P3109 extended: single zero, +-Inf at the top magnitude below the NaN; the NaN
           // is the sign-only code (signed) or the all-ones code (unsigned, Inf one below)
  finite,  // every code is a finite number (OCP FP6, FP4)
};

enum class Kind : std::uint8_t { floating, integer };

// How round-to-nearest-even treats a format without mantissa bits and without zero (E8M0),
// where the last code bit is the exponent's.
enum class Ties : std::uint8_t {
  even_code,     // correctly rounded: a tie goes to the even code (the even exponent)
  implicit_bit,  // ml_dtypes and PyTorch: the implicit leading 1 is the last kept bit, so a tie
                 // 1.5 * 2^k rounds up; below 2^(1 - bias) x rounds at the quantum 2^(1 - bias)
                 // as a subnormal would, code 0 (2^-bias) taking what would round to 0
};

struct Format {
  Kind kind = Kind::floating;
  bool is_signed = true;
  int exp_bits = 0;   // 1..8 (floating)
  int man_bits = 0;   // 0..23 (floating); the total width for integer formats
  int bias = 0;
  Specials specials = Specials::ieee;
  bool subnormals = true;  // false: E = 0 is an ordinary binade and there is no zero (E8M0)
  Ties ties = Ties::even_code;  // implicit_bit only with man_bits == 0 and no subnormals
  std::int32_t int_min = 0, int_max = 0;  // integer formats only

  int bits() const noexcept;            // width of a code
  std::uint32_t code_mask() const noexcept { return bits() >= 32 ? ~0u : (1u << bits()) - 1; }
  bool has_inf() const noexcept { return kind == Kind::floating && (specials == Specials::ieee || specials == Specials::p3109); }
  bool has_nan() const noexcept { return nan_code().has_value(); }
  bool has_negative_zero() const noexcept;
  bool has_zero() const noexcept { return kind == Kind::integer || subnormals; }

  // Largest magnitude code (sign bit clear) that encodes a finite number.
  std::uint32_t max_finite_code() const noexcept;
  std::optional<std::uint32_t> nan_code() const noexcept;          // the canonical NaN
  std::optional<std::uint32_t> inf_code(bool negative) const noexcept;
  std::uint32_t sign_bit() const noexcept { return is_signed && kind == Kind::floating ? 1u << (bits() - 1) : 0u; }

  double max_finite() const noexcept;
  double min_normal() const noexcept;     // smallest positive normal (integers: 1)
  double min_subnormal() const noexcept;  // smallest positive value

  friend bool operator==(const Format&, const Format&) = default;
};

// Inline: the codec asks these of every element it casts.
inline int Format::bits() const noexcept {
  if (kind == Kind::integer) return man_bits;
  return (is_signed ? 1 : 0) + exp_bits + man_bits;
}

inline bool Format::has_negative_zero() const noexcept {
  return kind == Kind::floating && is_signed && subnormals &&
         specials != Specials::fnuz && specials != Specials::p3109;
}

inline std::uint32_t Format::max_finite_code() const noexcept {
  if (kind == Kind::integer) return static_cast<std::uint32_t>(int_max);
  const std::uint32_t all = (1u << (exp_bits + man_bits)) - 1;  // every magnitude bit set
  switch (specials) {
    case Specials::ieee: return (((1u << exp_bits) - 1) << man_bits) - 1;
    case Specials::fn: return all - 1;
    case Specials::p3109: return is_signed ? all - 1 : all - 2;
    case Specials::fnuz:
    case Specials::finite: return all;
  }
  return all;
}

inline std::optional<std::uint32_t> Format::nan_code() const noexcept {
  if (kind == Kind::integer) return std::nullopt;
  switch (specials) {
    case Specials::ieee:
      if (man_bits == 0) return std::nullopt;  // the all-ones exponent holds only Inf
      return (((1u << exp_bits) - 1) << man_bits) | (1u << (man_bits - 1));
    case Specials::fn: return (1u << (exp_bits + man_bits)) - 1;
    case Specials::fnuz: return 1u << (bits() - 1);
    case Specials::p3109: return is_signed ? 1u << (bits() - 1) : (1u << bits()) - 1;
    case Specials::finite: return std::nullopt;
  }
  return std::nullopt;
}

inline std::optional<std::uint32_t> Format::inf_code(bool negative) const noexcept {
  const std::uint32_t s = negative ? sign_bit() : 0u;
  if (kind == Kind::integer) return std::nullopt;
  if (specials == Specials::ieee) return s | (((1u << exp_bits) - 1) << man_bits);
  if (specials == Specials::p3109) return s | (max_finite_code() + 1);
  return std::nullopt;
}

// Generic constructors. Default bias is 2^(e-1) - 1.
Format minifloat(int exp_bits, int man_bits, Specials specials, bool is_signed = true,
                 std::optional<int> bias = std::nullopt, bool subnormals = true);
Format integer_format(int bits, bool is_signed, bool symmetric);

// Throws lowp::Error when the descriptor is out of range (bits, exponent, mantissa, bias).
void validate(const Format& f);

}  // namespace lowp
