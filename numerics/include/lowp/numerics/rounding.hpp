// Rounding of a binary significand, in every mode lowp supports.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace lowp {

enum class Round : std::uint8_t {
  nearest_even,  // IEEE roundTiesToEven (default)
  nearest_away,  // roundTiesToAway
  toward_zero,
  toward_pos,    // toward +inf
  toward_neg,    // toward -inf
  stochastic,    // up with probability proportional to the distance (CPFloat mode SP)
  odd,           // round to odd: truncate, then set the last bit if inexact
};

// CLI spellings: nearest, away, zero, up, down, stochastic, odd.
std::optional<Round> parse_round(std::string_view name) noexcept;
std::string_view round_name(Round r) noexcept;

// Stochastic rounding uses 32 random bits u: the magnitude rounds up iff
// floor(f * 2^32) + u >= 2^32, where f in [0,1) is the discarded fraction. The probability of
// rounding up is therefore f truncated to 32 bits; the bias is below 2^-32 of an ulp.
constexpr std::uint32_t sr_fraction32(std::uint64_t rem, int shift) noexcept {
  if (shift <= 0) return 0;
  if (shift <= 32) return static_cast<std::uint32_t>(rem << (32 - shift));
  if (shift - 32 >= 64) return 0;
  return static_cast<std::uint32_t>(rem >> (shift - 32));
}

// Returns sig / 2^shift rounded to an integer in mode `mode`, for a value whose sign is
// `negative` (directed modes depend on it; the result is a magnitude). shift may exceed 63.
// `rand` is the 32 random bits used by Round::stochastic and ignored otherwise.
// Ties-to-even and round-to-odd look at the parity of the *code*, which is the parity of the
// result xor `odd_base` (it differs from the result's own parity only in formats with no
// mantissa bits, where the last code bit is the exponent's).
constexpr std::uint64_t round_shift(std::uint64_t sig, int shift, Round mode, bool negative,
                                    std::uint32_t rand = 0, bool odd_base = false) noexcept {
  if (shift <= 0) return sig << -shift;
  const std::uint64_t q = shift >= 64 ? 0 : sig >> shift;
  const std::uint64_t rem = shift >= 64 ? sig : sig & ((std::uint64_t{1} << shift) - 1);
  if (rem == 0) return q;
  // Compare rem with half = 2^(shift-1) without forming it when shift > 64.
  int cmp_half;  // -1 below, 0 equal, +1 above
  if (shift > 64) {
    cmp_half = -1;
  } else {
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    cmp_half = rem < half ? -1 : (rem == half ? 0 : 1);
  }
  const bool q_odd = ((q & 1) != 0) != odd_base;
  bool up = false;
  switch (mode) {
    case Round::nearest_even: up = cmp_half > 0 || (cmp_half == 0 && q_odd); break;
    case Round::nearest_away: up = cmp_half >= 0; break;
    case Round::toward_zero: up = false; break;
    case Round::toward_pos: up = !negative; break;
    case Round::toward_neg: up = negative; break;
    case Round::stochastic: {
      const std::uint32_t f = sr_fraction32(rem, shift);
      up = static_cast<std::uint32_t>(f + rand) < f;  // carry out of 32 bits
      break;
    }
    case Round::odd: up = !q_odd; break;
  }
  return q + (up ? 1 : 0);
}

// True when `mode` moves a magnitude that is too large toward infinity rather than
// toward the largest finite value (IEEE 754 overflow rule). Stochastic overflow is decided
// by the rounded result itself, so it is not covered here.
constexpr bool overflows_to_infinity(Round mode, bool negative) noexcept {
  switch (mode) {
    case Round::nearest_even:
    case Round::nearest_away:
    case Round::stochastic: return true;
    case Round::toward_zero:
    case Round::odd: return false;
    case Round::toward_pos: return !negative;
    case Round::toward_neg: return negative;
  }
  return true;
}

}  // namespace lowp
