// The AMX-INT8 int8 GEMM. tdpbssd multiplies signed by signed bytes, so no offset is needed.
// Tiles 0-3 accumulate a 32 x 32 block of C (16 x 16 int32 each), tiles 4-5 hold two 16-row
// slices of A (64 k each), tiles 6-7 two 16-column slices of B in the packed layout of
// gemm_int8_pack.hpp (a tile row = one k-group = 16 columns x 4 bytes).
//
// Called only when CPUID reports AMX-TILE and AMX-INT8, XCR0 enables the tile state and the
// kernel granted this process XTILEDATA (gemm_int8.cpp checks all three).
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "gemm_int8_kernels.hpp"
#include "gemm_int8_pack.hpp"

namespace lowp::quant::detail {
namespace {

constexpr std::size_t kBlock = 32;  // C block per tile group: 32 x 32

// The 64-byte tile configuration of palette 1.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

struct AlignedFree {
  void operator()(std::int8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using Buffer = std::unique_ptr<std::int8_t[], AlignedFree>;
Buffer allocate(std::size_t bytes) {
  return Buffer(static_cast<std::int8_t*>(::operator new[](bytes, std::align_val_t{64})));
}

// A copied row-major with rows padded to a multiple of 32 and K to `kp` bytes, zero-filled.
void pack_a_rows(const std::int8_t* A, std::size_t M, std::size_t K, std::size_t kp, std::size_t m,
                 std::int8_t* dst) {
  for (std::size_t k0 = 0; k0 < kp; k0 += 64) {
    const std::size_t left = K > k0 ? K - k0 : 0;
    const __mmask64 kmask = left >= 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1);
    const __m512i v =
        m < M && left > 0 ? _mm512_maskz_loadu_epi8(kmask, A + m * K + k0) : _mm512_setzero_si512();
    _mm512_store_si512(dst + k0, v);
  }
}

}  // namespace

void gemm_s8_amx(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                 std::size_t N, std::size_t K, int threads) {
  const std::size_t groups = packed_groups(K);  // multiple of 16: whole A/B tiles
  const std::size_t kp = groups * 4;
  const std::size_t mp = (M + kBlock - 1) / kBlock * kBlock;
  const std::size_t b_panels = (N + kPanelCols - 1) / kPanelCols;
  const std::size_t b_stride = groups * kGroupBytes;
  Buffer ap = allocate(mp * kp);
  Buffer bp = allocate(b_panels * b_stride);
  const std::size_t blocks_m = mp / kBlock;
  const std::size_t blocks_n = (N + kBlock - 1) / kBlock;

  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }

#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static) nowait
    for (std::ptrdiff_t m = 0; m < static_cast<std::ptrdiff_t>(mp); ++m)
      pack_a_rows(A, M, K, kp, static_cast<std::size_t>(m), ap.get() + m * kp);
#pragma omp for schedule(static)
    for (std::ptrdiff_t q = 0; q < static_cast<std::ptrdiff_t>(b_panels); ++q)
      pack_b_panel(B, N, K, static_cast<std::size_t>(q), bp.get() + q * b_stride, nullptr);

    _tile_loadconfig(&cfg);  // tile state is per thread
    alignas(64) std::int32_t out[kBlock * kBlock];
#pragma omp for schedule(static)
    for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(blocks_m * blocks_n); ++t) {
      const std::size_t m0 = (static_cast<std::size_t>(t) % blocks_m) * kBlock;
      const std::size_t n0 = (static_cast<std::size_t>(t) / blocks_m) * kBlock;
      const std::int8_t* a0 = ap.get() + m0 * kp;
      const std::int8_t* a1 = a0 + 16 * kp;
      // Columns n0.. and n0+16.. lie in one 64-column panel (n0 is a multiple of 32); past
      // N they read the panel's zero padding (or nothing is stored from them).
      const std::int8_t* b0 = bp.get() + (n0 / kPanelCols) * b_stride + (n0 % kPanelCols) * 4;
      const std::int8_t* b1 = b0 + 16 * 4;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (std::size_t g = 0; g < groups; g += 16) {
        _tile_loadd(4, a0 + 4 * g, kp);
        _tile_loadd(5, a1 + 4 * g, kp);
        _tile_loadd(6, b0 + g * kGroupBytes, kGroupBytes);
        _tile_loadd(7, b1 + g * kGroupBytes, kGroupBytes);
        _tile_dpbssd(0, 4, 6);
        _tile_dpbssd(1, 4, 7);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
      }
      constexpr std::size_t ld = kBlock * 4;  // bytes per row of `out`
      _tile_stored(0, out, ld);
      _tile_stored(1, out + 16, ld);
      _tile_stored(2, out + 16 * kBlock, ld);
      _tile_stored(3, out + 16 * kBlock + 16, ld);
      const std::size_t rows = std::min(kBlock, M - m0), cols = std::min(kBlock, N - n0);
      for (std::size_t r = 0; r < rows; ++r)
        std::memcpy(C + (m0 + r) * N + n0, out + r * kBlock, cols * 4);
    }
    _tile_release();
  }
}

}  // namespace lowp::quant::detail
