// Internal: the per-call constants of the bulk cast kernels and the per-ISA entry points.
//
// bulk.cpp turns (Format, options) into the plain structs below, once per call, from the scalar
// codec's own rules; the SIMD kernels (bulk_simd.hpp, instantiated in bulk_avx2.cpp and
// bulk_avx512.cpp) only read them. Codes travel as one uint32 lane per element.
#pragma once
#include <cstddef>
#include <cstdint>

#include "lowp/formats/bulk.hpp"
#include "lowp/numerics/rng.hpp"

namespace lowp::bulk_detail {

// float32 -> code for a floating format. The kernel works on the float32 bit pattern: a finite
// nonzero input with float32 biased exponent b has biased exponent E = b + bias_adj in the
// target. Normal results are rounded from V = (E << 23) | fraction at bit `shift` (= 23 - m):
// V counts quanta with the exponent already in the code bits, so V is the pattern re-biased.
// Subnormal results (E < sub_below) round the 24-bit significand at bit shift_sub - E.
struct EncodeParams {
  Round round = Round::nearest_even;
  int storage = 8;          // 4, 6, 8, 16 or 32 bits per stored code
  int shift = 0;            // 23 - man_bits
  int shift_sub = 0;        // shift + 1 with subnormals (quantum fixed below E = 1), else shift
  int bias_adj = 0;         // bias - 127
  int e_cap = 0;            // 2^exp_bits: any larger E overflows as well, so E is clamped here
  int sub_below = 1;        // E < sub_below rounds as a subnormal (INT32_MIN: no subnormals)
  int tiny_below = 0;       // E < tiny_below is below the smallest value of a no-zero format
  bool implicit_ties = false;  // nearest-even ties of normal results round up (Ties::implicit_bit)
  bool renorm = false;      // bias > 127 or no zero: renormalise float32 subnormals, clamp E,
                            // and give zeros their own codes
  std::uint32_t max_code = 0;     // largest finite magnitude code
  std::uint32_t flush_below = 0;  // magnitudes below this flush to zero (2^m or 0)
  std::uint32_t keep_mag = 0;     // negative nonzero result: (mag & keep_mag) | neg_or
  std::uint32_t neg_or = 0;
  std::uint32_t neg_zero = 0;     // negative input whose magnitude rounded to 0
  std::uint32_t ovf_pos = 0, ovf_neg = 0;    // finite overflow, by sign
  std::uint32_t inf_pos = 0, inf_neg = 0;    // +-Inf inputs
  std::uint32_t zero_pos = 0, zero_neg = 0;  // +-0 inputs (used when renorm)
  std::uint32_t nan_pos = 0, nan_neg = 0;    // NaN inputs, by sign bit
  RngKey key{};
  std::uint64_t offset = 0;
  std::uint64_t stride = 1;  // element i draws random_bits(key, offset + i * stride)
};

// code -> float32. Either arithmetic (the format's values are exactly float32 values with the
// float32 layout shifted: normal magnitudes are (mag << shift) + norm_add; subnormal ones, when
// bias != 127, are float(mag) * sub_scale) or a lookup in a 2^bits-entry table of decode().
struct DecodeParams {
  int storage = 8;
  const float* table = nullptr;  // set: table lookup, else arithmetic
  std::uint32_t code_mask = 0;
  std::uint32_t mag_mask = 0;
  std::uint32_t sign_bit = 0;
  int sign_shift = 0;            // moves the sign bit to bit 31
  int shift = 0;                 // 23 - man_bits
  std::uint32_t norm_add = 0;    // (127 - bias) << 23
  std::uint32_t sub_below = 0;   // 2^m when subnormals need the float(mag) * sub_scale path, else 0
  float sub_scale = 1.0f;
  std::int32_t nan_mag_from = 0; // magnitudes >= this are NaN (INT32_MAX: none)
  std::uint32_t nan_code = 0;    // this exact code is NaN too (0xFFFFFFFF: none)
  std::uint32_t inf_mag = 0;     // this magnitude is Inf (0xFFFFFFFF: none)
};

// Per-ISA kernels. n counts elements; `out`/`in` hold the packed codes (see bulk.hpp).
void encode_avx2(const EncodeParams& p, const float* in, std::size_t n, std::uint8_t* out, CastReport& rep);
void decode_avx2(const DecodeParams& p, const std::uint8_t* in, std::size_t n, float* out);
void fake_quant_avx2(const EncodeParams& e, const DecodeParams& d, float* x, std::size_t n, CastReport& rep);
void encode_avx512(const EncodeParams& p, const float* in, std::size_t n, std::uint8_t* out, CastReport& rep);
void decode_avx512(const DecodeParams& p, const std::uint8_t* in, std::size_t n, float* out);
void fake_quant_avx512(const EncodeParams& e, const DecodeParams& d, float* x, std::size_t n, CastReport& rep);

}  // namespace lowp::bulk_detail
