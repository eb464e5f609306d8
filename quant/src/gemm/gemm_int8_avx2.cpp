// The AVX2 int8 GEMM, for x86-64 CPUs without AVX512-VNNI. The bytes are widened to int16 and
// multiplied with vpmaddwd, which sums two int16 products into an int32 lane: at most
// 2 * 2^14, so nothing saturates (vpmaddubsw's int16 pair sums would).
//
// A is copied as int16 rows (K padded to even); B is packed in panels of 16 columns,
// k-pair-major (for every two k, the two int16 of each column: two ymm). A 4 x 16 register
// tile runs over the whole of K; C is covered by blocks of 4 rows x 128 columns, shared out
// among OpenMP threads, so that 4 rows of A stay in L1 across 8 B panels.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "gemm_int8_kernels.hpp"

namespace lowp::quant::detail {
namespace {

constexpr std::size_t kRows = 4;         // register tile: 4 rows ...
constexpr std::size_t kCols = 16;        // ... by 16 columns (2 ymm)
constexpr std::size_t kGroupPanels = 8;  // 128 columns per block of C

// 4 x 16 block of C over `pairs` k-pairs into `out` (row stride kCols).
void micro(const std::int16_t* a, std::size_t lda, const std::int16_t* b, std::size_t pairs,
           std::int32_t* out) {
  __m256i acc[kRows][2];
  for (auto& row : acc) row[0] = row[1] = _mm256_setzero_si256();
  for (std::size_t p = 0; p < pairs; ++p) {
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32 * p));
    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32 * p + 16));
    for (std::size_t r = 0; r < kRows; ++r) {
      std::int32_t word;  // A[r][2p], A[r][2p + 1]
      std::memcpy(&word, a + r * lda + 2 * p, 4);
      const __m256i av = _mm256_set1_epi32(word);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
    }
  }
  for (std::size_t r = 0; r < kRows; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + r * kCols), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + r * kCols + 8), acc[r][1]);
  }
}

}  // namespace

void gemm_s8_avx2(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                  std::size_t N, std::size_t K, int threads) {
  const std::size_t kp = (K + 1) / 2 * 2;  // int16 elements per A row, and k per B panel
  const std::size_t pairs = kp / 2;
  const std::size_t row_blocks = (M + kRows - 1) / kRows;
  const std::size_t panels = (N + kCols - 1) / kCols;
  const std::size_t groups = (panels + kGroupPanels - 1) / kGroupPanels;
  const std::size_t panel_elems = kp * kCols;
  // 32-byte aligned int16 storage (ymm loads of B).
  auto a16 = std::make_unique<std::int16_t[]>(row_blocks * kRows * kp);
  const std::size_t b_elems = panels * panel_elems + 16;
  auto b_raw = std::make_unique<std::int16_t[]>(b_elems);
  std::int16_t* b16 =
      b_raw.get() + (16 - (reinterpret_cast<std::uintptr_t>(b_raw.get()) / 2) % 16) % 16;

#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static) nowait
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(row_blocks * kRows); ++i) {
      std::int16_t* dst = a16.get() + i * kp;
      const auto r = static_cast<std::size_t>(i);
      for (std::size_t k = 0; k < kp; ++k) dst[k] = r < M && k < K ? A[r * K + k] : 0;
    }
#pragma omp for schedule(static)
    for (std::ptrdiff_t q = 0; q < static_cast<std::ptrdiff_t>(panels); ++q) {
      std::int16_t* dst = b16 + q * panel_elems;
      for (std::size_t c = 0; c < kCols; ++c) {
        const std::size_t n = static_cast<std::size_t>(q) * kCols + c;
        for (std::size_t k = 0; k < kp; ++k)
          dst[(k / 2) * 2 * kCols + 2 * c + (k & 1)] = n < N && k < K ? B[n * K + k] : 0;
      }
    }
#pragma omp for schedule(static)
    for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(groups * row_blocks); ++t) {
      const std::size_t g = static_cast<std::size_t>(t) / row_blocks;
      const std::size_t rb = static_cast<std::size_t>(t) % row_blocks;
      const std::size_t m0 = rb * kRows, rows = std::min(kRows, M - m0);
      alignas(32) std::int32_t out[kRows * kCols];
      for (std::size_t q = g * kGroupPanels; q < std::min(panels, (g + 1) * kGroupPanels); ++q) {
        micro(a16.get() + m0 * kp, kp, b16 + q * panel_elems, pairs, out);
        const std::size_t n0 = q * kCols, cols = std::min(kCols, N - n0);
        for (std::size_t r = 0; r < rows; ++r)
          std::memcpy(C + (m0 + r) * N + n0, out + r * kCols, cols * sizeof(std::int32_t));
      }
    }
  }
}

}  // namespace lowp::quant::detail
