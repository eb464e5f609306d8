// BM_decode_floor_<type>'s kernels (decode_floor_avx512.cpp, decode_floor_avx2.cpp): the
// per-column arithmetic of the lane dots of the ISA lowp runs alone, for a bound on the decode
// step that no decode of the blocks can beat.
#pragma once
#include <cstdint>

namespace lowp::bench {

// The column operations of a lane dot (accuracy/src/io/ggml/lane_dots_avx512.cpp,
// quant/src/gemm/packed_weight_avx512.cpp), per 16 weights of a column (AVX2, per 8: the same
// but for Q4_K, a widen of a column's 8 bytes + mask + convert instead of the word's shift and
// permute, and mxfp4's table looked up by one permute and a sign from bit 3):
//   q8_0   widen (signed) + convert + multiply by d + fma
//   q4_k   shift of a 4-byte word + nibble permute + fused multiply by d sc and subtract dmin m
//          (k_fused) + fma, a 64-byte load per 4 columns (the copy's words)
//   q6_k   widen (signed) + convert + multiply by d sc + fma
//   mxfp4  widen + table permute + multiply by the factor + fma
enum class FloorOps { q8_0, q4_k, q6_k, mxfp4 };

// Runs `passes` passes of one lane-dot call's column work (32 columns of 64 rows, four chains of
// 16 rows) with no block decoding, transposes or header unpacking, pass p on plane p % count of
// `planes` (floor_planes: count 1 stays in L1; kFloorL2Planes are read from L2, as a gemv's
// weight in cache is); returns a sum of the chains (for the caller to keep). Call only on a CPU
// with AVX-512.
float floor_passes_avx512(FloorOps ops, long passes, const std::uint8_t* planes, int count);
// The same for the AVX2 lane dots (eight chains of 8 rows). Call only on a CPU with AVX2.
float floor_passes_avx2(FloorOps ops, long passes, const std::uint8_t* planes, int count);

// A plane: the 2 KiB of one pass's columns (64 rows x 32 columns, a byte each) in four groups of
// 16 rows, each group's columns as an interleaved copy lays them (column c at + 16 c). Planes
// are kept group by group, as the copies keep their groups: group g of plane q at
// 512 (count g + q), so that passes over a ring read four streams, as a gemv does.
inline constexpr int kFloorPlaneBytes = 2048;
// 256 KiB of planes: a byte for each weight of BM_decode_gemv_*'s 128 x 2048 weight.
inline constexpr int kFloorL2Planes = 128;
// The calling thread's `count` planes (64-byte aligned, made on its first call with a count).
const std::uint8_t* floor_planes(int count);
// Pass p's group g in `count` planes.
inline const std::uint8_t* floor_group(const std::uint8_t* planes, int count, long p, int g) {
  return planes + 512 * (static_cast<long>(count) * g + p % count);
}

}  // namespace lowp::bench
