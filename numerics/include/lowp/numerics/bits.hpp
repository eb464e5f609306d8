// Bit-level views of IEEE binary32/binary64 values.
#pragma once
#include <bit>
#include <cstdint>

namespace lowp {

constexpr std::uint32_t f32_bits(float x) noexcept { return std::bit_cast<std::uint32_t>(x); }
constexpr float f32_from_bits(std::uint32_t u) noexcept { return std::bit_cast<float>(u); }
constexpr std::uint64_t f64_bits(double x) noexcept { return std::bit_cast<std::uint64_t>(x); }
constexpr double f64_from_bits(std::uint64_t u) noexcept { return std::bit_cast<double>(u); }

// A finite nonzero binary value split as (-1)^negative * sig * 2^(exp - (precision-1)),
// with sig normalised to exactly `precision` bits (subnormal inputs are renormalised).
struct Unpacked {
  bool negative = false;
  std::uint64_t sig = 0;
  int exp = 0;  // exponent of the leading bit: 2^exp <= |x| < 2^(exp+1)
};

// IEEE layout traits of the two host types.
template <class T> struct Ieee;
template <> struct Ieee<float> {
  using Bits = std::uint32_t;
  static constexpr int precision = 24, exp_bits = 8, bias = 127;
  static constexpr Bits bits(float x) noexcept { return f32_bits(x); }
};
template <> struct Ieee<double> {
  using Bits = std::uint64_t;
  static constexpr int precision = 53, exp_bits = 11, bias = 1023;
  static constexpr Bits bits(double x) noexcept { return f64_bits(x); }
};

// Splits a finite nonzero float or double; the result's sig has Ieee<T>::precision bits.
template <class T>
constexpr Unpacked unpack(T x) noexcept {
  using I = Ieee<T>;
  const auto u = I::bits(x);
  constexpr int mbits = I::precision - 1;
  const int bexp = static_cast<int>((u >> mbits) & ((1u << I::exp_bits) - 1));
  std::uint64_t sig = static_cast<std::uint64_t>(u & ((typename I::Bits{1} << mbits) - 1));
  Unpacked r;
  r.negative = (u >> (sizeof(u) * 8 - 1)) != 0;
  if (bexp == 0) {  // subnormal: renormalise so the leading bit sits at position mbits
    const int lead = 63 - std::countl_zero(sig);
    r.sig = sig << (mbits - lead);
    r.exp = 1 - I::bias - (mbits - lead);
  } else {
    r.sig = sig | (std::uint64_t{1} << mbits);
    r.exp = bexp - I::bias;
  }
  return r;
}

}  // namespace lowp
