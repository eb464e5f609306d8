// GEMMs on float32 data: C = A * B^T with A (M x K) and B (N x K) row-major, contiguous.
//
// Every lowp format decodes exactly to float32, so a GEMM "in format F" is a float32 GEMM on
// dequantized operands; what differs between hardware is the accumulation, emulated here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include "lowp/numerics/rounding.hpp"

namespace lowp::quant {

// C (M x N) = A B^T (+ C when accumulate), float32 with fused multiply-adds: every C element
// sums its products in blocks of 256 along K, each block an fma chain from 0 added into C.
// Runtime-dispatched AVX-512 / AVX2 / scalar kernels; the bits depend on neither the
// instruction set nor the thread count. threads = 0: all.
void gemm_f32(const float* A, const float* B, float* C, std::size_t M, std::size_t N, std::size_t K,
              bool accumulate = false, int threads = 0);

// How an operand of the GEMM above is laid out: A is M x K, or K x M when transposed; B is
// N x K, or K x N when transposed. The bits are those of gemm_f32 on transposed copies, which
// the packing makes anyway (so a backward pass needs no transposes of its own).
enum class Layout : std::uint8_t { as_is, transposed };
void gemm_f32(const float* A, Layout a, const float* B, Layout b, float* C, std::size_t M, std::size_t N,
              std::size_t K, bool accumulate = false, int threads = 0);

// A matrix as it is stored (row-major rows x cols, the reduction along cols), e.g. a weight
// left memory-mapped in its file's type. gemm_f32 widens it to float32 a panel at a time.
enum class StoredType : std::uint8_t { f32, f16, bf16, custom };
// custom: writes elements [k0, k0 + n) of one stored row as float32; k0 is a multiple of
// `block`, and so is n except at the row's end.
using WidenFn = void (*)(const void* ctx, const void* row, std::size_t k0, std::size_t n, float* out);
// custom, optional: the same elements of 8 rows at once, laid out as the one-row GEMM's SIMD
// lanes want them: out[k * ld + r] = element k0 + k of rows[r] (r < 8, k < n), each the float
// `widen` gives; k0 and n are multiples of 32 (set it only when cols is).
using WidenLanesFn = void (*)(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, float* out,
                              std::size_t ld);
// custom, optional: the one-row GEMM's decode and dot in one pass over 64 rows at once,
// continuing their fma chains in order of k: acc[r] = fma(x[k - k0], element k of rows[r],
// acc[r]) for k in [k0, k0 + n), each element the float `widen` gives; k0 and n are multiples
// of 32 (set it only when cols is). The one-row GEMM prefers it to widen_lanes.
using DotLanesFn = void (*)(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                            float* acc);
constexpr std::size_t kByteInterleave = 16;  // rows per group of a block-coded interleaved copy
// custom, optional: the integer product a stored format defines with an activation quantized to
// a companion format (llama.cpp's vec_dot with its vec_dot_type): `quantize` writes a row of n
// floats (a multiple of act_block) as n / act_block blocks of act_bytes; `dot` gives the
// product of a stored row's first n elements with such a row, in the order its format defines.
struct ActProduct {
  std::size_t act_block = 0, act_bytes = 0;
  void (*quantize)(const float* x, std::size_t n, void* out) = nullptr;
  float (*dot)(const void* row, const void* act, std::size_t n) = nullptr;
};
struct StoredMatrix {
  StoredType type = StoredType::f32;
  const void* data = nullptr;
  std::size_t rows = 0, cols = 0;
  const std::uint32_t* row_map = nullptr;  // row r is stored row row_map[r] (nullptr: row r)
  // custom only: bytes from one stored row to the next, the block (dividing 256) and the decoder.
  std::size_t row_bytes = 0, block = 1;
  WidenFn widen = nullptr;
  const void* ctx = nullptr;
  WidenLanesFn widen_lanes = nullptr;
  DotLanesFn dot_lanes = nullptr;
  // Columns per dot_lanes call (a multiple of 32; 0: 128). The one-row GEMM prefetches the
  // next rows between calls, so shorter calls spread those prefetches finer; a decoder that
  // re-reads a block header at each call's start wants longer ones.
  std::size_t dot_columns = 0;
  // custom: whether the one-row GEMM prefetches each pass's next rows between dot_lanes calls.
  // Rows read side by side are many streams, which the hardware prefetcher does not follow;
  // InterleavedRows' float32 copy is one stream, which it does, and the extra prefetches there
  // cost more than they bring (a float32 decode step 4-10 % slower on Zen 4).
  bool prefetch_rows = true;
  // custom, optional: dot_lanes over InterleavedRows' copy of these rows, whose groups of
  // kByteInterleave rows hold a row's words of interleave_word bytes side by side: word w of
  // row r at (kByteInterleave w + r) interleave_word (1: byte b at kByteInterleave b + r);
  // rows[kByteInterleave g] is group g's first row. Given, it lets InterleavedRows copy the
  // matrix. A word of more than a byte (4, dividing a block's bytes) puts consecutive bytes of
  // a row in one SIMD lane.
  DotLanesFn dot_interleaved = nullptr;
  std::size_t interleave_word = 1;
  // custom, optional: `data` holds elements of grouped_type (f32, f16 or bf16) in groups of
  // grouped_rows rows, element k of row r at (r / G cols + k) G + r % G (InterleavedRows'
  // copies). The GEMM then packs a sliver of rows within a group from its columns as they lie.
  std::size_t grouped_rows = 0;
  StoredType grouped_type = StoredType::f32;
  // custom, optional: a block's bytes when a row is its blocks one after another, each all its
  // elements need (element k's block at k / block * block_bytes); 0: a row decodes only whole
  // (a PackedWeight's factors lie before its codes).
  std::size_t block_bytes = 0;
  const char* name = nullptr;                // custom, optional: the stored type, for messages
  const ActProduct* act_product = nullptr;  // custom, optional: see ActProduct
};

// C (M x B.rows) = A B^T (+ C), A: M x B.cols float32; the same bits as gemm_f32 on B widened.
void gemm_f32(const float* A, const StoredMatrix& B, float* C, std::size_t M, bool accumulate = false,
              int threads = 0);
// C (M x B.rows) = A B^T through B.act_product (lowp::Error when B has none): each row of A
// quantized to its activation blocks, then every C element one `dot`. Each element's bits depend
// on neither M nor the thread count.
void gemm_act(const float* A, const StoredMatrix& B, float* C, std::size_t M, int threads = 0);
// The same for matrices of one input (a layer's [q | k | v]) in one parallel region: C[i][t ldc +
// r] = row t of A times row r of B[i], each element the bits the call above gives.
void gemm_act(const float* A, std::span<const StoredMatrix> B, std::span<float* const> C, std::size_t ldc,
              std::size_t M, int threads = 0);
// y[i] (1 x B[i].rows) = x B[i]^T for every i, each the bits gemm_f32(x, B[i], y[i], 1) gives:
// the one-row products of one input (a decode step's Q, K and V) in one parallel region, their
// rows shared among the threads together. Every B[i].cols is the length of x.
void gemv_f32(const float* x, std::span<const StoredMatrix> B, std::span<float* const> y, int threads = 0);
// out (n x B.cols) = rows [r0, r0 + n) of B as float32 (lowp::Error when out of range).
void widen_rows(const StoredMatrix& B, std::size_t r0, std::size_t n, float* out);
// The bytes B's rows occupy as stored (custom: rows x row_bytes).
std::size_t stored_bytes(const StoredMatrix& B) noexcept;

// A limited-precision floating accumulator: the products a*b are exact; each addition into
// the accumulator (the first one, 0 + a*b, included) is rounded to `man_bits` mantissa bits
// and `exp_bits` of exponent range (IEEE-style: bias 2^(exp_bits-1) - 1, subnormals,
// overflow to infinity or to the largest finite value as the rounding mode dictates).
// promote_every = k > 0: every k products the partial sum is added into a float32 total
// (round to nearest even) and restarted (DeepSeek-V3's work-around for the ~14-bit
// accumulation of FP8 tensor cores). man_bits in [1, 23], exp_bits in [2, 8] (else lowp::Error).
// Round::stochastic draws random_bits(rng_key(seed), (i * N + j) * K + k) for the addition
// of product k into C[i][j].
struct Accumulation {
  int man_bits = 23;
  int exp_bits = 8;
  Round round = Round::toward_zero;
  std::size_t promote_every = 0;
  std::uint64_t seed = 0;
};
void gemm_emulated(const float* A, const float* B, float* C, std::size_t M, std::size_t N,
                   std::size_t K, const Accumulation& acc);

}  // namespace lowp::quant
