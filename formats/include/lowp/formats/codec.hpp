// The scalar codec: one generic, correctly rounded encode/decode for every Format.
//
// Semantics (see docs/formats.md for the full table):
// - float and double inputs are each rounded directly to the format (no intermediate format).
// - Overflow, non-saturating (default): a magnitude that rounds above max_finite gives Inf
//   (formats with Inf) or NaN (fn/fnuz) when the rounding mode moves it toward infinity, and
//   +-max_finite under toward-zero, round-to-odd and the directed mode pointing the other way.
//   Formats without Inf and NaN (FP6, FP4, integers) always saturate.
// - Saturating: finite overflow clamps to +-max_finite, and so do +-Inf inputs (as PTX
//   .satfinite does); NaN stays NaN.
// - A NaN result keeps the sign of what it stands for (ml_dtypes, PyTorch): NaN input,
//   infinity or overflowed value; e4m3fn -466 -> 0xFF. fnuz/unsigned formats have one NaN.
// - NaN input gives the canonical NaN of its sign; formats without NaN give ml_dtypes' code:
//   -0 for +NaN, +0 for -NaN where there is a -0 (FP6, FP4), else 0 (+0 or the smallest value),
//   counted by the bulk APIs. Inf input to a format
//   without Inf: NaN if it has one, else +-max.
// - Unsigned formats: a negative input rounds as if the format had a sign, and a negative
//   nonzero result is NaN (or 0 when the format has no NaN); -0 gives +0.
// - No-zero formats (E8M0): a zero input is NaN (the smallest value when saturating or without
//   NaN); nonzero results below the smallest value give the smallest
//   value in every rounding mode (keeping the sign where the format has one).
// - flush_subnormals: a result that would be subnormal after rounding becomes a zero of the
//   same sign (+0 where the format has no -0).
#pragma once
#include <cstdint>

#include "lowp/formats/format.hpp"
#include "lowp/numerics/rounding.hpp"

namespace lowp {

struct CastOptions {
  Round round = Round::nearest_even;
  bool saturate = false;
  bool flush_subnormals = false;
};

// `rand` supplies the 32 random bits for Round::stochastic (see rounding.hpp).
std::uint32_t encode(const Format& f, float x, const CastOptions& opt = {}, std::uint32_t rand = 0) noexcept;
std::uint32_t encode(const Format& f, double x, const CastOptions& opt = {}, std::uint32_t rand = 0) noexcept;

// The exact value of a code (NaN for NaN codes). Bits above the format's width are ignored.
double decode(const Format& f, std::uint32_t code) noexcept;

// False for codes wider than the format and for codes the format never produces
// (the -128 of a symmetric int8).
bool is_valid_code(const Format& f, std::uint32_t code) noexcept;
bool is_nan_code(const Format& f, std::uint32_t code) noexcept;

}  // namespace lowp
