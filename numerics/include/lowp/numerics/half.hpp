// Scalar bfloat16 and IEEE binary16 (float16) <-> float32 conversions on bit patterns.
//
// Decoding is exact (every 16-bit code, NaN payloads included, maps to one float). Encoding
// rounds to nearest, ties to even; overflow goes to Inf, subnormals are kept, NaN stays NaN
// (payload truncated; if truncation would leave no payload bit, the quiet bit is set), so
// encode(decode(c)) == c for every 16-bit code c.
#pragma once
#include <cstdint>

#include "lowp/numerics/bits.hpp"

namespace lowp {

constexpr float bf16_to_f32(std::uint16_t h) noexcept {
  return f32_from_bits(static_cast<std::uint32_t>(h) << 16);
}

constexpr std::uint16_t f32_to_bf16(float x) noexcept {
  const std::uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN
    const auto h = static_cast<std::uint16_t>(u >> 16);
    return (h & 0x7fu) ? h : static_cast<std::uint16_t>(h | 0x40u);
  }
  // Adding 0x7fff plus the kept lsb rounds ties to even; a carry into the exponent is the
  // correct next binade, and past the largest finite value it lands exactly on Inf.
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

constexpr float f16_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu;
  const std::uint32_t m = h & 0x3ffu;
  if (e == 0x1f) return f32_from_bits(sign | 0x7f800000u | (m << 13));  // Inf, NaN (payload kept)
  if (e != 0) return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
  // Zero or subnormal: m * 2^-24, exact in float.
  const float mag = static_cast<float>(m) * 0x1p-24f;
  return f32_from_bits(sign | f32_bits(mag));
}

constexpr std::uint16_t f32_to_f16(float x) noexcept {
  const std::uint32_t u = f32_bits(x);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) {  // NaN: keep the top payload bits
    const auto m = static_cast<std::uint16_t>((a >> 13) & 0x3ffu);
    return static_cast<std::uint16_t>(sign | 0x7c00u | (m ? m : 0x200u));
  }
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: Inf
  if (a >= 0x38800000u) {  // normal in binary16 (>= 2^-14): rebias, round 13 bits away
    const std::uint32_t r = a - (112u << 23);
    return static_cast<std::uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  // Subnormal or zero in binary16: round |x| * 2^24 to an integer. |x| < 2^-14 so the
  // shift below is at least 14; results of 1024 carry into the smallest normal, as they must.
  const std::uint32_t e = a >> 23;
  if (e < 102) return sign;  // |x| < 2^-25: rounds to zero (2^-25 itself ties to even 0)
  const std::uint32_t sig = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - e;  // value * 2^24 = sig * 2^(e - 126)
  const std::uint32_t q = sig >> shift;
  const std::uint32_t rem = sig & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  const std::uint32_t up = (rem > half || (rem == half && (q & 1u))) ? 1u : 0u;
  return static_cast<std::uint16_t>(sign | (q + up));
}

}  // namespace lowp
