// The AVX512-VNNI int8 GEMM. vpdpbusd multiplies unsigned by signed bytes, so A goes in
// offset by +128 (a ^ 0x80 as an unsigned byte) and the result is corrected by
// 128 * (column sum of B): sum (a + 128) b - 128 sum b = sum a b, exactly, modulo 2^32.
//
// BLIS-style: A is copied (offset, K padded) row by row, B packed into panels of 64 columns
// (see gemm_int8_pack.hpp); a 6 x 64 register tile (24 zmm accumulators) runs over a block
// of K; C is split into tiles shared out among OpenMP threads.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <memory>
#include <new>
#include <vector>

#include "gemm_int8_kernels.hpp"
#include "gemm_int8_pack.hpp"

namespace lowp::quant::detail {
namespace {

constexpr std::size_t kMr = 6;                  // rows of the register tile
constexpr std::size_t kVecs = kPanelCols / 16;  // zmm per tile row
constexpr std::size_t kKcGroups = 128;  // K block: a 64-column B panel slice is 32 KiB (L1)
constexpr std::size_t kMcPanels = 32;   // tile of C: 192 rows ...
constexpr std::size_t kNcPanels = 4;    // ... by 256 columns

struct AlignedFree {
  void operator()(std::int8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using Buffer = std::unique_ptr<std::int8_t[], AlignedFree>;
Buffer allocate(std::size_t bytes) {
  return Buffer(static_cast<std::int8_t*>(::operator new[](bytes, std::align_val_t{64})));
}
// A 64-byte aligned buffer that only grows.
struct Scratch {
  Buffer p;
  std::size_t n = 0;
  std::int8_t* get(std::size_t bytes) {
    if (bytes > n) {
      p = allocate(bytes);
      n = bytes;
    }
    return p.get();
  }
};

// Row m of A offset to unsigned (a ^ 0x80) into `dst`, `kp` bytes (K padded with zeros of A,
// i.e. 0x80); rows past M likewise.
void copy_a_row(const std::int8_t* A, std::size_t M, std::size_t K, std::size_t kp, std::size_t m,
                std::int8_t* dst) {
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(0x80));
  for (std::size_t k0 = 0; k0 < kp; k0 += 64) {
    const std::size_t left = K > k0 ? K - k0 : 0;
    const __mmask64 kmask = left >= 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1);
    const __m512i v = m < M && left > 0 ? _mm512_maskz_loadu_epi8(kmask, A + m * K + k0)
                                        : _mm512_setzero_si512();
    _mm512_store_si512(dst + k0, _mm512_xor_si512(v, offset));
  }
}

// The micro-kernel is written in assembly: GCC 12 copies every vpdpbusd accumulator to a
// fresh register and back (and spills some) in each iteration, which halves the speed.
// zmm0-23: the 6 x 4 accumulators (row r in zmm4r..4r+3); zmm24-27: the four B vectors of
// a k-group; zmm28: the broadcast A word; k1-k4: the column masks of the four vectors.
// A rows r = 0..5 are read at a + r * lda as (a), (a,lda), (a,lda,2), (a3), (a3,lda), (a3,lda,2).
#define LOWP_LOAD_ROW(Z0, Z1, Z2, Z3)                  \
  "vmovdqu32 (%[s]), %%zmm" #Z0 "%{%%k1%}%{z%}\n\t"    \
  "vmovdqu32 64(%[s]), %%zmm" #Z1 "%{%%k2%}%{z%}\n\t"  \
  "vmovdqu32 128(%[s]), %%zmm" #Z2 "%{%%k3%}%{z%}\n\t" \
  "vmovdqu32 192(%[s]), %%zmm" #Z3 "%{%%k4%}%{z%}\n\t" \
  "add %[ss], %[s]\n\t"
#define LOWP_DOT_ROW(ADDR, Z0, Z1, Z2, Z3)      \
  "vpbroadcastd " ADDR ", %%zmm28\n\t"          \
  "vpdpbusd %%zmm24, %%zmm28, %%zmm" #Z0 "\n\t" \
  "vpdpbusd %%zmm25, %%zmm28, %%zmm" #Z1 "\n\t" \
  "vpdpbusd %%zmm26, %%zmm28, %%zmm" #Z2 "\n\t" \
  "vpdpbusd %%zmm27, %%zmm28, %%zmm" #Z3 "\n\t"
#define LOWP_STORE_ROW(Z0, Z1, Z2, Z3)            \
  "vmovdqu32 %%zmm" #Z0 ", (%[c])%{%%k1%}\n\t"    \
  "vmovdqu32 %%zmm" #Z1 ", 64(%[c])%{%%k2%}\n\t"  \
  "vmovdqu32 %%zmm" #Z2 ", 128(%[c])%{%%k3%}\n\t" \
  "vmovdqu32 %%zmm" #Z3 ", 192(%[c])%{%%k4%}\n\t" \
  "add %[ldc], %[c]\n\t"

// C[0..6) x [0..64) (columns masked by `mask`, row stride ldc) over `groups` k-groups of
// the 6 rows of A at `ap` (row stride lda bytes) and the packed B panel slice at `bp`.
// The accumulators start from `init` (rows `init_stride` elements apart): C itself, or the
// correction -128 * colsum with stride 0 on the first K block.
void micro(const std::int8_t* ap, std::size_t lda, const std::int8_t* bp, std::size_t groups,
           const std::int32_t* init, std::size_t init_stride, std::int32_t* c, std::size_t ldc,
           const __mmask16* mask) {
  static_assert(kMr == 6 && kVecs == 4, "the assembly is written for a 6 x 4 tile");
  const std::size_t ss = init_stride * 4, ldcb = ldc * 4;
  const std::int8_t* a3 = ap + 3 * lda;
  __asm__ volatile(
      "kmovw (%[m]), %%k1\n\t"
      "kmovw 2(%[m]), %%k2\n\t"
      "kmovw 4(%[m]), %%k3\n\t"
      "kmovw 6(%[m]), %%k4\n\t"
      LOWP_LOAD_ROW(0, 1, 2, 3) LOWP_LOAD_ROW(4, 5, 6, 7) LOWP_LOAD_ROW(8, 9, 10, 11)
      LOWP_LOAD_ROW(12, 13, 14, 15) LOWP_LOAD_ROW(16, 17, 18, 19) LOWP_LOAD_ROW(20, 21, 22, 23)
      "test %[n], %[n]\n\t"
      "jz 2f\n\t"
      ".p2align 5\n\t"
      "1:\n\t"
      "vmovdqa64 (%[b]), %%zmm24\n\t"
      "vmovdqa64 64(%[b]), %%zmm25\n\t"
      "vmovdqa64 128(%[b]), %%zmm26\n\t"
      "vmovdqa64 192(%[b]), %%zmm27\n\t"
      LOWP_DOT_ROW("(%[a])", 0, 1, 2, 3)
      LOWP_DOT_ROW("(%[a],%[lda],1)", 4, 5, 6, 7)
      LOWP_DOT_ROW("(%[a],%[lda],2)", 8, 9, 10, 11)
      LOWP_DOT_ROW("(%[a3])", 12, 13, 14, 15)
      LOWP_DOT_ROW("(%[a3],%[lda],1)", 16, 17, 18, 19)
      LOWP_DOT_ROW("(%[a3],%[lda],2)", 20, 21, 22, 23)
      "add $4, %[a]\n\t"
      "add $4, %[a3]\n\t"
      "add $256, %[b]\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      LOWP_STORE_ROW(0, 1, 2, 3) LOWP_STORE_ROW(4, 5, 6, 7) LOWP_STORE_ROW(8, 9, 10, 11)
      LOWP_STORE_ROW(12, 13, 14, 15) LOWP_STORE_ROW(16, 17, 18, 19) LOWP_STORE_ROW(20, 21, 22, 23)
      : [a] "+r"(ap), [a3] "+r"(a3), [b] "+r"(bp), [n] "+r"(groups), [s] "+r"(init), [c] "+r"(c)
      : [lda] "r"(lda), [ss] "r"(ss), [ldc] "r"(ldcb), [m] "r"(mask)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",
        "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "k1", "k2", "k3",
        "k4", "cc", "memory");
}
#undef LOWP_LOAD_ROW
#undef LOWP_DOT_ROW
#undef LOWP_STORE_ROW

// The micro-kernel for a tile of C with fewer than 6 rows: through a full-height scratch
// tile (A has padding rows, so all 6 rows can be computed).
void edge(const std::int8_t* ap, std::size_t lda, const std::int8_t* bp, std::size_t groups,
          std::int32_t* c, std::size_t ldc, std::size_t rows, bool first, const __mmask16* mask,
          const std::int32_t* corr) {
  alignas(64) std::int32_t tile[kMr * kPanelCols] = {};
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t v = 0; v < kVecs; ++v)
      _mm512_store_si512(tile + r * kPanelCols + 16 * v,
                         _mm512_maskz_loadu_epi32(mask[v], c + r * ldc + 16 * v));
  micro(ap, lda, bp, groups, first ? corr : tile, first ? 0 : kPanelCols, tile, kPanelCols, mask);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t v = 0; v < kVecs; ++v)
      _mm512_mask_storeu_epi32(c + r * ldc + 16 * v, mask[v],
                               _mm512_load_si512(tile + r * kPanelCols + 16 * v));
}

// Tile t of C (rows [i0, i1), columns [j0, j1)) as float32: acc * (sa[i] * sb[j]), then + bias[j],
// each operation rounded on its own as in dequantize_s32 (the _round forms are not contracted
// into fused multiply-adds, as plain vector arithmetic may be).
void dequantize_tile(const std::int32_t* t, std::size_t ldt, std::size_t i0, std::size_t i1, std::size_t j0,
                     std::size_t j1, const Int8Dequant& dq, float* C, std::size_t ldc) {
  constexpr int kCur = _MM_FROUND_CUR_DIRECTION;
  for (std::size_t i = i0; i < i1; ++i) {
    const __m512 sa = _mm512_set1_ps(dq.a_scale[dq.a_per_row ? i : 0]);
    const std::int32_t* row = t + (i - i0) * ldt;
    float* c = C + i * ldc;
    for (std::size_t j = j0; j < j1; j += 16) {
      const std::size_t n = std::min<std::size_t>(16, j1 - j);
      const __mmask16 m = n == 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
      const __m512 sb = dq.b_per_row ? _mm512_maskz_loadu_ps(m, dq.b_scale + j) : _mm512_set1_ps(dq.b_scale[0]);
      const __m512 acc = _mm512_cvt_roundepi32_ps(_mm512_maskz_loadu_epi32(m, row + (j - j0)), kCur);
      __m512 y = _mm512_mul_round_ps(acc, _mm512_mul_round_ps(sa, sb, kCur), kCur);
      if (dq.bias) y = _mm512_add_round_ps(y, _mm512_maskz_loadu_ps(m, dq.bias + j), kCur);
      _mm512_mask_storeu_ps(c + j, m, y);
    }
  }
}

// The driver of both entry points: C32 (int32 C, written in place) or Cf with dq (each tile
// accumulated in a thread's int32 scratch, then dequantized into Cf).
void run(const std::int8_t* A, const std::int8_t* B, bool b_transposed, std::int32_t* C32, float* Cf,
         const Int8Dequant* dq, std::size_t M, std::size_t N, std::size_t K, int threads) {
  const std::size_t groups = packed_groups(K);  // packed length (multiple of 16)
  const std::size_t used = (K + 3) / 4;          // groups the kernel runs over
  const std::size_t kp = groups * 4;
  // A row stride: 64 bytes more than a multiple of 4 KiB apart would alias in L1 and in the
  // store-to-load checks.
  const std::size_t lda = kp % 4096 == 0 ? kp + 64 : kp;
  const std::size_t a_panels = (M + kMr - 1) / kMr;
  const std::size_t a_rows = a_panels * kMr;
  const std::size_t b_panels = (N + kPanelCols - 1) / kPanelCols;
  const std::size_t b_stride = groups * kGroupBytes;
  // The calling thread's buffers, kept between calls (fresh pages would fault on every call).
  static thread_local Scratch a_buf, b_buf, corr_buf;
  std::int8_t* const ap = a_buf.get(a_rows * lda);
  std::int8_t* const bp = b_buf.get(b_panels * b_stride);
  auto* const corr = reinterpret_cast<std::int32_t*>(corr_buf.get(b_panels * kPanelCols * sizeof(std::int32_t)));
  const std::size_t tiles_m = (a_panels + kMcPanels - 1) / kMcPanels;
  const std::size_t tiles_n = (b_panels + kNcPanels - 1) / kNcPanels;
  constexpr std::size_t kTileCols = kNcPanels * kPanelCols;

#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static) nowait
    for (std::ptrdiff_t m = 0; m < static_cast<std::ptrdiff_t>(a_rows); ++m)
      copy_a_row(A, M, K, kp, static_cast<std::size_t>(m), ap + m * lda);
#pragma omp for schedule(static)
    for (std::ptrdiff_t q = 0; q < static_cast<std::ptrdiff_t>(b_panels); ++q) {
      std::int32_t* cs = corr + q * kPanelCols;
      std::int8_t* dst = bp + q * b_stride;
      if (b_transposed)
        pack_bt_panel(B, N, K, static_cast<std::size_t>(q), dst, cs);
      else
        pack_b_panel(B, N, K, static_cast<std::size_t>(q), dst, cs);
      for (std::size_t c = 0; c < kPanelCols; ++c)  // -128 * colsum, modulo 2^32
        cs[c] = static_cast<std::int32_t>(0u - (static_cast<std::uint32_t>(cs[c]) << 7));
    }
    static thread_local std::vector<std::int32_t> scratch;
    if (!C32) scratch.resize(kMcPanels * kMr * kTileCols);
    // Tiles in column-major order: a thread's consecutive tiles share their B panels.
#pragma omp for schedule(static)
    for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(tiles_m * tiles_n); ++t) {
      const std::size_t tm = static_cast<std::size_t>(t) % tiles_m;
      const std::size_t tn = static_cast<std::size_t>(t) / tiles_m;
      const std::size_t p0 = tm * kMcPanels, p1 = std::min(a_panels, p0 + kMcPanels);
      const std::size_t q0 = tn * kNcPanels, q1 = std::min(b_panels, q0 + kNcPanels);
      // Where this tile accumulates: C itself, or the scratch (row stride kTileCols).
      std::int32_t* base = C32 ? C32 + p0 * kMr * N + q0 * kPanelCols : scratch.data();
      const std::size_t ldc = C32 ? N : kTileCols;
      for (std::size_t g0 = 0; g0 < used; g0 += kKcGroups) {
        const std::size_t len = std::min(kKcGroups, used - g0);
        for (std::size_t q = q0; q < q1; ++q) {
          const std::size_t n0 = q * kPanelCols;
          __mmask16 mask[kVecs];
          for (std::size_t v = 0; v < kVecs; ++v) {
            const std::size_t col = n0 + 16 * v;
            const std::size_t left = N > col ? N - col : 0;
            mask[v] = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
          }
          const std::int32_t* cq = corr + n0;
          const std::int8_t* bq = bp + q * b_stride + g0 * kGroupBytes;
          for (std::size_t p = p0; p < p1; ++p) {
            const std::int8_t* aq = ap + p * kMr * lda + 4 * g0;
            std::int32_t* c = base + (p - p0) * kMr * ldc + (q - q0) * kPanelCols;
            const std::size_t rows = std::min(kMr, M - p * kMr);
            if (rows == kMr)
              micro(aq, lda, bq, len, g0 == 0 ? cq : c, g0 == 0 ? 0 : ldc, c, ldc, mask);
            else
              edge(aq, lda, bq, len, c, ldc, rows, g0 == 0, mask, cq);
          }
        }
      }
      if (!C32)
        dequantize_tile(base, kTileCols, p0 * kMr, std::min(M, p1 * kMr), q0 * kPanelCols,
                        std::min(N, q1 * kPanelCols), *dq, Cf, N);
    }
  }
}

}  // namespace

void gemm_s8_vnni(const std::int8_t* A, const std::int8_t* B, std::int32_t* C, std::size_t M,
                  std::size_t N, std::size_t K, int threads) {
  run(A, B, false, C, nullptr, nullptr, M, N, K, threads);
}

void gemm_s8_vnni_f32(const std::int8_t* A, const std::int8_t* B, bool b_transposed, float* C, std::size_t M,
                      std::size_t N, std::size_t K, const Int8Dequant& dq, int threads) {
  run(A, B, b_transposed, nullptr, C, &dq, M, N, K, threads);
}

}  // namespace lowp::quant::detail
