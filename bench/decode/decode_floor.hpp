// BM_decode_floor_<type>'s kernels (decode_floor_avx512.cpp, decode_floor_avx2.cpp): the
// per-column arithmetic of the lane dots of the ISA lowp runs alone, for a bound on the decode
// step that no decode of the blocks can beat.
#pragma once

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
// 16 rows) on a byte plane held in L1, with no block decoding, transposes or header unpacking;
// returns a sum of the chains (for the caller to keep). Call only on a CPU with AVX-512.
float floor_passes_avx512(FloorOps ops, long passes);
// The same for the AVX2 lane dots (eight chains of 8 rows). Call only on a CPU with AVX2.
float floor_passes_avx2(FloorOps ops, long passes);

}  // namespace lowp::bench
