// The codec's result rules, shared by the scalar codec and the constants of the SIMD kernels
// (internal header; the semantics are documented in lowp/formats/codec.hpp).
#pragma once
#include <cstdint>

#include "lowp/formats/codec.hpp"

namespace lowp::detail {

// Signed result assembled from a magnitude code, honouring the zero and unsigned rules.
inline std::uint32_t finish(const Format& f, bool negative, std::uint32_t mag) noexcept {
  const bool zero = mag == 0 && f.has_zero();
  if (negative && !f.is_signed) return zero ? 0u : f.nan_code().value_or(0u);
  if (zero && !f.has_negative_zero()) return 0u;
  return (negative ? f.sign_bit() : 0u) | mag;
}

// The NaN of a sign, as ml_dtypes and PyTorch give it: the canonical NaN with the sign bit set
// for a negative input. Formats with one NaN (fnuz, p3109: the sign-only code; unsigned
// formats) give that NaN for either sign.
inline std::uint32_t signed_nan(const Format& f, bool negative) noexcept {
  return f.nan_code().value_or(0u) | (negative ? f.sign_bit() : 0u);
}

// Code of a NaN input. Formats without NaN: signed floating formats with -0 give the code
// ml_dtypes gives (its stand-in NaN is the sign-only code, -0, negated for a negative NaN),
// integers and the others +0 (or the smallest value where there is no zero).
inline std::uint32_t nan_input_code(const Format& f, bool negative) noexcept {
  if (f.has_nan()) return signed_nan(f, negative);
  if (f.kind == Kind::floating && f.has_negative_zero()) return negative ? 0u : f.sign_bit();
  return 0u;
}

// Whether a finite magnitude that rounded beyond max_finite goes to Inf/NaN (else to max).
inline bool overflow_to_infinity(const CastOptions& o, bool negative) noexcept {
  return !o.saturate && (o.round == Round::stochastic || overflows_to_infinity(o.round, negative));
}

// Code for a value beyond max_finite (after rounding) or an infinite input.
inline std::uint32_t overflow_code(const Format& f, bool negative, bool to_infinity) noexcept {
  if (to_infinity) {
    if (auto inf = f.inf_code(false)) return finish(f, negative, *inf);
    if (f.has_nan()) return signed_nan(f, negative);
  }
  return finish(f, negative, f.max_finite_code());
}

}  // namespace lowp::detail
