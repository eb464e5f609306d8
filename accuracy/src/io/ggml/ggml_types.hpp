// ggml tensor types as GGUF stores them (private to lowp_accuracy): names, block geometry and
// the decoders that widen blocks to float32 exactly as ggml's own to_float does.
//
// A row of n elements of a block type is n / block_size(t) blocks of block_bytes(t) bytes.
// dequantize() is meant to be called a row or a panel at a time on memory-mapped weights.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "lowp/numerics/cpu.hpp"

namespace lowp::accuracy::ggml {

// ggml's type numbers (ggml.h); the gaps are types ggml removed.
enum Type : std::uint32_t {
  f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8, q8_1 = 9,
  q2_k = 10, q3_k = 11, q4_k = 12, q5_k = 13, q6_k = 14, q8_k = 15,
  iq2_xxs = 16, iq2_xs = 17, iq3_xxs = 18, iq1_s = 19, iq4_nl = 20, iq3_s = 21, iq2_s = 22, iq4_xs = 23,
  i8 = 24, i16 = 25, i32 = 26, i64 = 27, f64 = 28, iq1_m = 29, bf16 = 30,
  tq1_0 = 34, tq2_0 = 35, mxfp4 = 39, nvfp4 = 40, q1_0 = 41, q2_0 = 42,
};

// "Q4_K (12)"; "unknown (777)" for a number ggml never used.
std::string type_name(std::uint32_t type);

// Whether ggml defines the type's storage (then block_size/block_bytes answer) ...
bool known(std::uint32_t type);
// ... and whether dequantize() decodes it.
bool can_dequantize(std::uint32_t type);

// Elements per block and bytes per block (1 and the element size for plain types).
// Both throw lowp::Error naming the type when it is not known().
std::size_t block_size(std::uint32_t type);
std::size_t block_bytes(std::uint32_t type);

// Bytes of `n` elements; throws when n is not a multiple of the block size or overflows.
std::uint64_t bytes_for(std::uint32_t type, std::uint64_t n);

// Widens n elements (n a multiple of block_size(type)) from `blocks` into out[0..n).
// Throws lowp::Error naming the type when it cannot be decoded or n does not fit its blocks.
void dequantize(std::uint32_t type, const void* blocks, float* out, std::size_t n);
// The same with the decoders of instruction set `isa` (available on this CPU; the bits are the
// same with every one): Q8_0, Q4_K and Q6_K have AVX2 decoders.
void dequantize(std::uint32_t type, const void* blocks, float* out, std::size_t n, Isa isa);

// Widens elements [k0, k0 + n) of 8 rows at once into SIMD lanes: out[k * ld + r] = element
// k0 + k of rows[r] (r < 8, k < n), bitwise dequantize()'s float; k0 and n multiples of 32.
using LaneDecoder = void (*)(const void* const* rows, std::size_t k0, std::size_t n, float* out, std::size_t ld);
// The lane decoder of `type` with instruction set `isa` (available on this CPU), or nullptr:
// Q4_0, Q8_0, Q4_K, Q5_K and Q6_K have AVX2 ones.
LaneDecoder lane_decoder(std::uint32_t type, Isa isa);

// The one-row GEMV's decode and dot in one pass, as ggml's vec_dot does: continues the fma
// chains of kLaneDotRows rows over elements [k0, k0 + n) (multiples of 32), in order of k:
// acc[r] = fma(x[k - k0], element k of rows[r], acc[r]), each element dequantize()'s float.
constexpr std::size_t kLaneDotRows = 64;
using LaneDot = void (*)(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc);
// The lane dot of `type` with instruction set `isa` (available on this CPU), or nullptr:
// Q4_0, Q8_0, Q4_K, Q5_K and Q6_K have AVX2 and AVX-512 ones.
LaneDot lane_dot(std::uint32_t type, Isa isa);
// The same over an interleaved copy (quant::InterleavedRows of a block-coded matrix): rows in
// groups of kLaneDotInterleave, byte b of a group's row r at kLaneDotInterleave b + r, and
// rows[kLaneDotInterleave g] the start of group g. AVX2 and AVX-512 have them (scalar: nullptr):
// a group's 16 bytes of a column are then a register's lanes (AVX2: two registers' lanes) as
// they are, with no transpose.
constexpr std::size_t kLaneDotInterleave = 16;
struct InterleavedDot {
  LaneDot dot = nullptr;
  // The bytes a row's word has in the copy `dot` reads (quant::StoredMatrix::interleave_word):
  // word w of a group's row r at (kLaneDotInterleave w + r) word. 1 (bytes, as above) but for
  // AVX-512's Q4_K, 4. One value with the dot, so that the two cannot disagree.
  std::size_t word = 1;
};
InterleavedDot lane_dot_interleaved(std::uint32_t type, Isa isa);

}  // namespace lowp::accuracy::ggml
