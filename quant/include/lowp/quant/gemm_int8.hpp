// A real int8 GEMM: C (M x N, int32) = A (M x K, int8) * B (N x K, int8)^T, row-major.
//
// Kernels: AVX512-VNNI (vpdpbusd, with the +128 offset on A and a column-sum correction),
// AMX-INT8 tiles (after asking the kernel for permission with arch_prctl), and a portable
// fallback. Every kernel gives the same int32 results bit for bit (integer arithmetic).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lowp::quant {

enum class Int8Kernel { portable, vnni, amx };
Int8Kernel best_int8_kernel() noexcept;           // honours LOWP_ISA=scalar (portable)
bool int8_kernel_available(Int8Kernel k) noexcept;
std::string_view int8_kernel_name(Int8Kernel k) noexcept;

struct Int8GemmOptions {
  std::optional<Int8Kernel> kernel{};  // default: the best available
  int threads = 0;                     // 0: all OpenMP threads
};
// Throws lowp::Error when a forced kernel is unavailable. Shapes of any size (ragged edges).
void gemm_s8s8_s32(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                   std::size_t N, std::size_t K, const Int8GemmOptions& opt = {});

}  // namespace lowp::quant
