// gemm_s8s8_s32 / gemm_s8s8_f32: argument checks, run-time kernel choice, the dequantization
// and the portable kernel.
#include <cpuid.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gemm_int8_kernels.hpp"
#include "transpose.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/gemm_int8.hpp"

namespace lowp::quant {
namespace {

// XCR0 (which register states the OS saves); xgetbv is issued by hand because this file is
// built for baseline x86-64, where the compiler's intrinsic needs -mxsave.
std::uint64_t xcr0() noexcept {
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (std::uint64_t{hi} << 32) | lo;
}

struct Int8Cpu {
  bool vnni = false;  // AVX512-VNNI usable: CPU bit + OS saves the ZMM and opmask state
  bool amx = false;   // AMX-TILE and AMX-INT8 on the CPU, XTILECFG/XTILEDATA in XCR0
};

Int8Cpu detect() noexcept {
  Int8Cpu r;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return r;  // OSXSAVE
  const std::uint64_t x = xcr0();
  const bool zmm_state = (x & 0xE6) == 0xE6;  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  const bool tile_state = (x & (3ull << 17)) == (3ull << 17);
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return r;
  r.vnni = zmm_state && (c & (1u << 11)) && isa_available(Isa::avx512);
  r.amx = r.vnni && tile_state && (d & (1u << 24)) && (d & (1u << 25));
  return r;
}

const Int8Cpu& cpu() noexcept {
  static const Int8Cpu c = detect();
  return c;
}

// Linux keeps AMX tile data off until the process asks (arch_prctl ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA = 18); asked once, only on CPUs that have AMX.
bool amx_permitted() noexcept {
  static const bool ok = [] {
    if (!cpu().amx) return false;
    constexpr int kArchReqXcompPerm = 0x1023;
    constexpr int kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
}

}  // namespace

bool int8_kernel_available(Int8Kernel k) noexcept {
  switch (k) {
    case Int8Kernel::portable: return true;
    case Int8Kernel::avx2: return isa_available(Isa::avx2);
    case Int8Kernel::vnni: return cpu().vnni;
    case Int8Kernel::amx: return amx_permitted();
  }
  return false;
}

// LOWP_ISA (through best_isa) caps the choice: scalar leaves the portable kernel, avx2 the
// AVX2 one (no VNNI, no AMX).
Int8Kernel best_int8_kernel() noexcept {
  const Isa isa = best_isa();
  if (isa == Isa::avx512 && int8_kernel_available(Int8Kernel::amx)) return Int8Kernel::amx;
  if (isa == Isa::avx512 && int8_kernel_available(Int8Kernel::vnni)) return Int8Kernel::vnni;
  if (isa != Isa::scalar && int8_kernel_available(Int8Kernel::avx2)) return Int8Kernel::avx2;
  return Int8Kernel::portable;
}

std::string_view int8_kernel_name(Int8Kernel k) noexcept {
  switch (k) {
    case Int8Kernel::portable: return "portable";
    case Int8Kernel::avx2: return "avx2";
    case Int8Kernel::vnni: return "avx512-vnni";
    case Int8Kernel::amx: return "amx-int8";
  }
  return "?";
}

namespace {

// The checks both entry points make; returns the kernel and the thread count to use.
struct Int8Plan {
  Int8Kernel kernel;
  int threads;
};
Int8Plan plan(const char* who, const void* A, const void* B, const void* C, std::size_t M, std::size_t N,
              std::size_t K, const Int8GemmOptions& opt) {
  const auto fail = [&](const std::string& what) {
    throw Error(std::string(who) + " (M=" + std::to_string(M) + ", N=" + std::to_string(N) +
                ", K=" + std::to_string(K) + "): " + what);
  };
  if (opt.threads < 0) fail("threads = " + std::to_string(opt.threads) + " is negative");
  std::size_t mk = 0, nk = 0, mn = 0;
  if (__builtin_mul_overflow(M, K, &mk) || __builtin_mul_overflow(N, K, &nk) ||
      __builtin_mul_overflow(M, N, &mn))
    fail("the matrix sizes overflow size_t");
  if (mn == 0) return {Int8Kernel::portable, 0};
  if (!C) fail("C is null");
  if (K > 0 && (!A || !B)) fail(A ? "B is null" : "A is null");
  const Int8Kernel k = opt.kernel.value_or(best_int8_kernel());
  if (!int8_kernel_available(k))
    fail("the " + std::string(int8_kernel_name(k)) + " kernel is not available on this machine");
  // Small products are not worth waking threads (whose spin-waiting also hurts a loaded
  // machine): at least 2^22 multiply-adds per thread. The results do not depend on it.
  std::size_t work = 0;
  if (__builtin_mul_overflow(mn, K, &work)) work = SIZE_MAX;
  work >>= 22;
  const int wanted = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  return {k, static_cast<int>(std::clamp<std::size_t>(work, 1, static_cast<std::size_t>(wanted)))};
}

void run_s32(Int8Kernel k, const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
             std::size_t N, std::size_t K, int threads) {
  if (K == 0) {
    std::fill(C, C + M * N, 0);
    return;
  }
  switch (k) {
    case Int8Kernel::portable: detail::gemm_s8_portable(A, B, C, M, N, K, threads); break;
    case Int8Kernel::avx2: detail::gemm_s8_avx2(A, B, C, M, N, K, threads); break;
    case Int8Kernel::vnni: detail::gemm_s8_vnni(A, B, C, M, N, K, threads); break;
    case Int8Kernel::amx: detail::gemm_s8_amx(A, B, C, M, N, K, threads); break;
  }
}

}  // namespace

void gemm_s8s8_s32(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                   std::size_t N, std::size_t K, const Int8GemmOptions& opt) {
  const Int8Plan p = plan("gemm_s8s8_s32", A, B, C, M, N, K, opt);
  if (p.threads == 0) return;
  run_s32(p.kernel, A, B, C, M, N, K, p.threads);
}

void gemm_s8s8_f32(const std::int8_t* A, const std::int8_t* B, Layout b, float* C, std::size_t M,
                   std::size_t N, std::size_t K, const Int8Dequant& dq, const Int8GemmOptions& opt) {
  const Int8Plan p = plan("gemm_s8s8_f32", A, B, C, M, N, K, opt);
  if (p.threads == 0) return;
  if (!dq.a_scale || !dq.b_scale)
    throw Error("gemm_s8s8_f32 (M=" + std::to_string(M) + ", N=" + std::to_string(N) + ", K=" +
                std::to_string(K) + "): null " + (dq.a_scale ? "b_scale" : "a_scale"));
  const bool bt = b == Layout::transposed;
  if (p.kernel == Int8Kernel::vnni && K > 0) {
    detail::gemm_s8_vnni_f32(A, B, bt, C, M, N, K, dq, p.threads);
    return;
  }
  // Every other kernel: the int32 product, then the dequantization.
  std::vector<std::int8_t> b_natural;
  if (bt && K > 0) {
    b_natural.resize(N * K);
    detail::transpose(B, b_natural.data(), K, N);
    B = b_natural.data();
  }
  std::vector<std::int32_t> acc(M * N);
  run_s32(p.kernel, A, B, acc.data(), M, N, K, p.threads);
  const auto rows = static_cast<std::ptrdiff_t>(M);
#pragma omp parallel for schedule(static) num_threads(p.threads) if (p.threads > 1)
  for (std::ptrdiff_t i = 0; i < rows; ++i)
    detail::dequantize_s32(acc.data() + static_cast<std::size_t>(i) * N, static_cast<std::size_t>(i),
                           static_cast<std::size_t>(i) + 1, 0, N, N, dq, C, N);
}

namespace detail {

void dequantize_s32(const std::int32_t* acc, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1,
                    std::size_t lda, const Int8Dequant& dq, float* C, std::size_t ldc) {
  for (std::size_t i = i0; i < i1; ++i) {
    const float sa = dq.a_scale[dq.a_per_row ? i : 0];
    const std::int32_t* a = acc + (i - i0) * lda;
    float* c = C + i * ldc;
    for (std::size_t j = j0; j < j1; ++j) {
      const float sb = dq.b_scale[dq.b_per_row ? j : 0];
      c[j] = static_cast<float>(a[j - j0]) * (sa * sb);
    }
    // A loop of its own: the product is rounded before the bias is added, never fused.
    if (dq.bias)
      for (std::size_t j = j0; j < j1; ++j) c[j] += dq.bias[j];
  }
}

}  // namespace detail

// ---- the portable kernel --------------------------------------------------------------

namespace detail {
namespace {

// 65536 products of at most 2^14 in magnitude: an int32 partial sum cannot overflow, so the
// inner loop stays plain int32 (which the compiler vectorises); chunks add up modulo 2^32.
constexpr std::size_t kChunk = 65536;

// R rows of A times S rows of B, the whole of K, into C (leading dimension ldc).
template <int R, int S>
void block(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t K,
           std::size_t ldc) {
  std::uint32_t total[R][S] = {};
  for (std::size_t k0 = 0; k0 < K; k0 += kChunk) {
    const std::size_t k1 = std::min(K, k0 + kChunk);
    std::int32_t acc[R][S] = {};
    for (std::size_t k = k0; k < k1; ++k)
      for (int r = 0; r < R; ++r) {
        const std::int32_t a = A[r * K + k];
        for (int s = 0; s < S; ++s) acc[r][s] += a * B[s * K + k];
      }
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < S; ++s) total[r][s] += static_cast<std::uint32_t>(acc[r][s]);
  }
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s) C[r * ldc + s] = static_cast<std::int32_t>(total[r][s]);
}

template <int R>
void row_block(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t N,
               std::size_t K) {
  std::size_t j = 0;
  for (; j + 4 <= N; j += 4) block<R, 4>(A, B + j * K, C + j, K, N);
  for (; j < N; ++j) block<R, 1>(A, B + j * K, C + j, K, N);
}

}  // namespace

void gemm_s8_portable(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                      std::size_t N, std::size_t K, int threads) {
  const auto blocks = static_cast<std::ptrdiff_t>((M + 3) / 4);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t i = static_cast<std::size_t>(b) * 4;
    if (i + 4 <= M) {
      row_block<4>(A + i * K, B, C + i * N, N, K);
    } else {
      for (std::size_t r = i; r < M; ++r) row_block<1>(A + r * K, B, C + r * N, N, K);
    }
  }
}

}  // namespace detail
}  // namespace lowp::quant
