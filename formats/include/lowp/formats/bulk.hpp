// Bulk casts over arrays: float32 -> codes, codes -> float32, and fake-quant in place.
//
// Storage of codes: formats of at most 4 bits are packed two per byte (element 2i in the low
// nibble), 5-6 bits four per three bytes (a little-endian 24-bit group, element 4i in the low
// six bits), 7-8 bits one per byte, 9-16 bits one uint16 (host order), wider one uint32.
// A trailing partial byte or group is padded with zero bits.
//
// Stochastic rounding draws the bits for element i from random_bits(rng_key(seed), offset +
// i * stride), so a large array cast in pieces (offset = index of the piece's first element) gives
// the same codes as one call, whatever the thread count or SIMD width; a stride > 1 casts a row of
// a matrix with the bits its elements have in the transpose's stream (one column of it). (Pieces of packed codes must
// start on a byte or group boundary: element indices that are multiples of 2 (4-bit) or 4 (6-bit).)
//
// Every call picks the best kernel for this CPU (see lowp/numerics/cpu.hpp); passing `isa`
// forces one, and Isa::scalar is the reference every SIMD kernel is tested bitwise against.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "lowp/formats/codec.hpp"
#include "lowp/numerics/cpu.hpp"

namespace lowp {

struct CastReport {
  std::size_t nan_inputs = 0;  // NaN inputs met (formats without NaN encode them as +0)
  std::size_t inf_inputs = 0;  // +-Inf inputs met
};

struct BulkOptions {
  CastOptions cast{};
  std::uint64_t seed = 0;    // stochastic rounding only
  std::uint64_t offset = 0;  // index of in[0] in the whole stream, for stochastic rounding
  std::uint64_t stride = 1;  // index step from one element to the next, for stochastic rounding
  std::optional<Isa> isa{};  // default: the best this CPU runs
  // encode_f32 only: formats of fewer than 8 bits write one code per byte, unpacked (what a
  // uint8 array of codes holds), straight from the kernel instead of packing.
  bool one_per_byte = false;
};

int storage_bits(const Format& f) noexcept;  // 4, 6, 8, 16 or 32
std::size_t encoded_bytes(const Format& f, std::size_t n) noexcept;

// Each throws lowp::Error when `out` is too small, or when a forced `isa` is unavailable.
CastReport encode_f32(const Format& f, std::span<const float> in, std::span<std::uint8_t> out,
                      const BulkOptions& opt = {});
void decode_f32(const Format& f, std::span<const std::uint8_t> in, std::span<float> out,
                std::optional<Isa> isa = std::nullopt);
// x[i] <- decode(encode(x[i])), as float32.
CastReport fake_quant_f32(const Format& f, std::span<float> x, const BulkOptions& opt = {});

}  // namespace lowp
