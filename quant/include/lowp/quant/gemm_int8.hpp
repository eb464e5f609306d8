// A real int8 GEMM: C (M x N, int32) = A (M x K, int8) * B (N x K, int8)^T, row-major.
//
// Kernels: AVX512-VNNI (vpdpbusd, with the +128 offset on A and a column-sum correction),
// AMX-INT8 tiles (after asking the kernel for permission with arch_prctl), AVX2 (vpmaddwd on
// bytes widened to int16) and a portable C++ fallback. Every kernel gives the same int32
// results bit for bit: the exact sums, modulo 2^32 (which only matters for K > 131071).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "lowp/quant/gemm.hpp"

namespace lowp::quant {

enum class Int8Kernel { portable, avx2, vnni, amx };
// The fastest kernel here, capped by LOWP_ISA: scalar -> portable, avx2 -> avx2 at most.
Int8Kernel best_int8_kernel() noexcept;
bool int8_kernel_available(Int8Kernel k) noexcept;
std::string_view int8_kernel_name(Int8Kernel k) noexcept;

struct Int8GemmOptions {
  std::optional<Int8Kernel> kernel{};  // default: the best available
  int threads = 0;                     // 0: all OpenMP threads
};
// Throws lowp::Error when a forced kernel is unavailable. Shapes of any size (ragged edges).
void gemm_s8s8_s32(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                   std::size_t N, std::size_t K, const Int8GemmOptions& opt = {});

// The dequantization of an int8 product: a_scale holds M values (a_per_row) or one, b_scale
// N values (b_per_row) or one; bias N values or null.
struct Int8Dequant {
  const float* a_scale = nullptr;
  bool a_per_row = false;
  const float* b_scale = nullptr;
  bool b_per_row = false;
  const float* bias = nullptr;
};
// C (M x N, float32) = (float)(A B^T in int32) * (a_scale[i] * b_scale[j]), then + bias[j]:
// each operation rounded as written (no fused multiply-add). A is M x K; B is N x K, or K x N
// when b is Layout::transposed (the packing reads either). The same bits as gemm_s8s8_s32
// followed by that loop, on every kernel; the AVX512-VNNI kernel applies it to each tile of C
// as the tile's last K block finishes, so no int32 C is ever stored.
void gemm_s8s8_f32(const std::int8_t* A, const std::int8_t* B, Layout b, float* C, std::size_t M,
                   std::size_t N, std::size_t K, const Int8Dequant& dq, const Int8GemmOptions& opt = {});

}  // namespace lowp::quant
