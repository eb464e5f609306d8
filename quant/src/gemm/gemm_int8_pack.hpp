// Packing of B for the AVX512-VNNI and AMX-INT8 kernels (internal; include only from the
// *_vnni.cpp / *_amx.cpp files, which are built with AVX-512 + VNNI flags).
//
// Packed B: panels of 64 columns (rows of B); in a panel, k-group g (4 consecutive k) holds
// the 4 bytes of each of the 64 columns, 256 bytes: the operand layout of vpdpbusd (one
// zmm = 16 columns x 4 k) and of the AMX B tile (a tile row = 16 columns x 4 k). Columns
// past N and k past K are zero, so they add nothing to any sum.
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace lowp::quant::detail {
namespace {  // internal linkage: each ISA file keeps its own copy

constexpr std::size_t kPanelCols = 64;
constexpr std::size_t kGroupBytes = 4 * kPanelCols;  // one k-group of a panel

// Number of k-groups in a packed panel: ceil(K / 4), rounded up to 16 (a 64-byte K chunk).
inline std::size_t packed_groups(std::size_t K) { return (K + 63) / 64 * 16; }

// 16 x 16 transpose of 32-bit elements: on return r[j] holds element j of every input row.
// The maskz forms with a full mask are the plain instructions; GCC 12 warns about the
// undefined pass-through operand of the unmasked intrinsics.
inline __m512i unpacklo32(__m512i a, __m512i b) {
  return _mm512_maskz_unpacklo_epi32(0xFFFF, a, b);
}
inline __m512i unpackhi32(__m512i a, __m512i b) {
  return _mm512_maskz_unpackhi_epi32(0xFFFF, a, b);
}
inline __m512i unpacklo64(__m512i a, __m512i b) { return _mm512_maskz_unpacklo_epi64(0xFF, a, b); }
inline __m512i unpackhi64(__m512i a, __m512i b) { return _mm512_maskz_unpackhi_epi64(0xFF, a, b); }
template <int Imm>
inline __m512i lanes(__m512i a, __m512i b) {
  return _mm512_maskz_shuffle_i32x4(0xFFFF, a, b, Imm);
}

inline void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = unpacklo32(r[i], r[i + 1]);
    t[i + 1] = unpackhi32(r[i], r[i + 1]);
  }
  // u[4q + e], e = 0..3: in each 128-bit lane L, element 4L + e of rows 4q..4q+3.
  for (int q = 0; q < 4; ++q) {
    u[4 * q + 0] = unpacklo64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 1] = unpackhi64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 2] = unpacklo64(t[4 * q + 1], t[4 * q + 3]);
    u[4 * q + 3] = unpackhi64(t[4 * q + 1], t[4 * q + 3]);
  }
  for (int e = 0; e < 4; ++e) {
    const __m512i x01 = lanes<0x88>(u[e], u[4 + e]);  // lanes 0, 2
    const __m512i y01 = lanes<0xDD>(u[e], u[4 + e]);  // lanes 1, 3
    const __m512i x23 = lanes<0x88>(u[8 + e], u[12 + e]);
    const __m512i y23 = lanes<0xDD>(u[8 + e], u[12 + e]);
    r[0 + e] = lanes<0x88>(x01, x23);
    r[4 + e] = lanes<0x88>(y01, y23);
    r[8 + e] = lanes<0xDD>(x01, x23);
    r[12 + e] = lanes<0xDD>(y01, y23);
  }
}

// Packs panel q of B (N x K, row-major) into `dst` (packed_groups(K) * 256 bytes). When
// `colsum` is not null, colsum[c] receives the sum over k of B[64q + c][k] (0 past N).
inline void pack_b_panel(const std::int8_t* B, std::size_t N, std::size_t K, std::size_t q,
                         std::int8_t* dst, std::int32_t* colsum) {
  const std::size_t groups = packed_groups(K);
  const __m512i ones = _mm512_set1_epi8(1);
  for (std::size_t c0 = 0; c0 < kPanelCols; c0 += 16) {
    __m512i sum = _mm512_setzero_si512();
    for (std::size_t g0 = 0; g0 < groups; g0 += 16) {
      const std::size_t k0 = 4 * g0;
      const std::size_t left = K > k0 ? K - k0 : 0;
      const __mmask64 kmask = left >= 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1);
      __m512i r[16];
      for (std::size_t i = 0; i < 16; ++i) {
        const std::size_t n = q * kPanelCols + c0 + i;
        r[i] = n < N && left > 0 ? _mm512_maskz_loadu_epi8(kmask, B + n * K + k0)
                                 : _mm512_setzero_si512();
      }
      transpose16(r);
      for (std::size_t j = 0; j < 16; ++j) {
        _mm512_storeu_si512(dst + (g0 + j) * kGroupBytes + 4 * c0, r[j]);
        if (colsum) sum = _mm512_dpbusd_epi32(sum, ones, r[j]);
      }
    }
    if (colsum) _mm512_storeu_si512(colsum + c0, sum);
  }
}

// Packs panel q of a B stored transposed, Bt (K x N, row-major: B[n][k] = Bt[k * N + n]),
// into the same layout as pack_b_panel (with the same column sums). A k-group is 4 rows of Bt,
// 64 bytes each: their bytes interleaved (column c's 4 bytes together) are the group.
inline void pack_bt_panel(const std::int8_t* Bt, std::size_t N, std::size_t K, std::size_t q,
                          std::int8_t* dst, std::int32_t* colsum) {
  const std::size_t groups = packed_groups(K);
  const std::size_t n0 = q * kPanelCols, left = N > n0 ? N - n0 : 0;
  const __mmask64 nmask = left >= 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1);
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i sum[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
  for (std::size_t g = 0; g < groups; ++g) {
    __m512i r[4];
    for (std::size_t t = 0; t < 4; ++t) {
      const std::size_t k = 4 * g + t;
      r[t] = k < K && left > 0 ? _mm512_maskz_loadu_epi8(nmask, Bt + k * N + n0) : _mm512_setzero_si512();
    }
    // Per 128-bit lane L: x0 holds columns 16L..16L+3 (4 bytes each), x1 16L+4.., x2 16L+8..,
    // x3 16L+12..; then a 4 x 4 transpose of lanes puts columns 16v..16v+15 in o[v].
    const __m512i lo01 = _mm512_unpacklo_epi8(r[0], r[1]), hi01 = _mm512_unpackhi_epi8(r[0], r[1]);
    const __m512i lo23 = _mm512_unpacklo_epi8(r[2], r[3]), hi23 = _mm512_unpackhi_epi8(r[2], r[3]);
    const __m512i x0 = _mm512_unpacklo_epi16(lo01, lo23), x1 = _mm512_unpackhi_epi16(lo01, lo23);
    const __m512i x2 = _mm512_unpacklo_epi16(hi01, hi23), x3 = _mm512_unpackhi_epi16(hi01, hi23);
    const __m512i y0 = _mm512_shuffle_i32x4(x0, x1, 0x44), y1 = _mm512_shuffle_i32x4(x2, x3, 0x44);
    const __m512i y2 = _mm512_shuffle_i32x4(x0, x1, 0xEE), y3 = _mm512_shuffle_i32x4(x2, x3, 0xEE);
    const __m512i o[4] = {_mm512_shuffle_i32x4(y0, y1, 0x88), _mm512_shuffle_i32x4(y0, y1, 0xDD),
                          _mm512_shuffle_i32x4(y2, y3, 0x88), _mm512_shuffle_i32x4(y2, y3, 0xDD)};
    for (std::size_t v = 0; v < 4; ++v) {
      _mm512_storeu_si512(dst + g * kGroupBytes + 64 * v, o[v]);
      if (colsum) sum[v] = _mm512_dpbusd_epi32(sum[v], ones, o[v]);
    }
  }
  if (colsum)
    for (std::size_t v = 0; v < 4; ++v) _mm512_storeu_si512(colsum + 16 * v, sum[v]);
}

}  // namespace
}  // namespace lowp::quant::detail
