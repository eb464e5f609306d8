// The int8 GEMM kernels behind gemm_s8s8_s32 (internal). Each computes
// C (M x N) = A (M x K) * B (N x K)^T in int32, row-major, with `threads` > 0 OpenMP threads.
// Sums wrap modulo 2^32 (two's complement), so every kernel agrees bit for bit even when a
// sum leaves the int32 range (only possible for K > 131071).
#pragma once
#include <cstddef>
#include <cstdint>

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

}  // namespace lowp::quant::detail
