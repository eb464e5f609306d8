// The int8 GEMM kernels behind gemm_s8s8_s32 (internal). Each computes
// C (M x N) = A (M x K) * B (N x K)^T in int32, row-major, with `threads` > 0 OpenMP threads.
// Sums wrap modulo 2^32 (two's complement), so every kernel agrees bit for bit even when a
// sum leaves the int32 range (only possible for K > 131071).
#pragma once
#include <cstddef>
#include <cstdint>

#include "lowp/quant/gemm_int8.hpp"

namespace lowp::quant::detail {

void gemm_s8_portable(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                      std::size_t N, std::size_t K, int threads);
// AVX2 (vpmaddwd on bytes widened to int16): call only when the CPU supports AVX2.
void gemm_s8_avx2(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                  std::size_t N, std::size_t K, int threads);
// AVX512-VNNI: call only when the CPU and the OS support AVX-512 and VNNI.
void gemm_s8_vnni(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                  std::size_t N, std::size_t K, int threads);
// AMX-INT8: call only after the kernel granted the XTILEDATA permission to this process.
void gemm_s8_amx(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                 std::size_t N, std::size_t K, int threads);


// C[i][j] = (float)acc[i - i0][j - j0] * (sa[i] * sb[j]) (+ bias[j]) for rows [i0, i1) and
// columns [j0, j1): gemm_s8s8_f32's dequantization, the reference for the fused kernel.
void dequantize_s32(const std::int32_t* acc, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1,
                    std::size_t lda, const Int8Dequant& dq, float* C, std::size_t ldc);
// AVX512-VNNI with that dequantization fused (each tile of C converted as its last K block
// finishes); b_transposed: B is stored K x N.
void gemm_s8_vnni_f32(const std::int8_t* A, const std::int8_t* B, bool b_transposed, float* C, std::size_t M,
                      std::size_t N, std::size_t K, const Int8Dequant& dq, int threads);

}  // namespace lowp::quant::detail
