// AVX-512 lane dots (ggml_types.hpp's LaneDot) of Q4_0, Q8_0, Q4_K, Q5_K and Q6_K: the one-row
// GEMV's decode and fma chains in one pass, 64 rows as four groups of 16 (row r of a group in
// lane r; four independent chains hide the fma's latency). For each 32 columns a group's rows' small integers
// (one 32-byte register a row, or the packed bytes they come from) are transposed as bytes, so
// that column c's 16 rows are 16 bytes in a row; those widen to a float per lane and take the
// scalar decoder's float operations lane-wise with one scale per lane (dequantize.cpp), then
// acc = fma(x_c, w, acc). Every weight is bitwise dequantize()'s float and every chain the
// scalar fma chain over k in order. Compiled with -ffp-contract=off like the decoders.
//
// Each dot reads its rows from one of two sources: rows side by side in their own layout
// (Rows: a group's 16 rows' 32 bytes at an offset, loaded and transposed), or a copy whose
// groups of 16 rows are already transposed (Interleaved: byte b of row r at 16 b + r, as
// InterleavedRows lays them), from which the same bytes are plain loads.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "io/ggml/dequantize_simd.hpp"
#include "lowp/numerics/byte_transpose_avx512.hpp"

namespace lowp::accuracy::ggml {
namespace {

using simd::Plane;

constexpr int kGroup = 16;  // rows per group (lanes of a register)
constexpr int kGroups = static_cast<int>(kLaneDotRows) / kGroup;
static_assert(kGroup == kLaneDotInterleave, "an interleaved group is a register's lanes");

const std::uint8_t* row_at(const void* const* rows, int r, std::size_t offset) {
  return static_cast<const std::uint8_t*>(rows[r]) + offset;
}

__m256i load32(const std::uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// 32 columns of a group in plain order: column c's 16 bytes at 16 c (an interleaved copy's
// bytes in place, or bytes computed from them).
struct Columns {
  alignas(64) std::uint8_t b[512];
  const __m128i* at(int c) const { return reinterpret_cast<const __m128i*>(b + 16 * c); }
};
struct ColumnsAt {  // the same, read where they are
  const std::uint8_t* b = nullptr;
  const __m128i* at(int c) const { return reinterpret_cast<const __m128i*>(b + 16 * c); }
};

// The f16 whose low and high bytes are columns lo, lo + 1 of a transposed plane, as floats.
template <class P>
__m512 halves(const P& t, int lo) {
  const __m128i a = _mm_loadu_si128(t.at(lo)), b = _mm_loadu_si128(t.at(lo + 1));
  return _mm512_cvtph_ps(_mm256_set_m128i(_mm_unpackhi_epi8(a, b), _mm_unpacklo_epi8(a, b)));
}

template <class P>
__m512i widen(const P& t, int c, bool sign) {
  const __m128i b = _mm_loadu_si128(t.at(c));
  return sign ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
}

// Column c as floats, one per lane.
template <class P>
__m512 floats(const P& t, int c, bool sign) { return _mm512_cvtepi32_ps(widen(t, c, sign)); }

// Rows side by side: group g's rows are rows[16 g ..]; load() transposes their 32 bytes at an
// offset (in transpose()'s register order, which put() stores as a Plane).
struct Rows {
  using P = Plane;
  const void* const* rows;
  [[gnu::always_inline]] void load(int g, std::size_t offset, __m512i v[8]) const {
    __m256i q[16];
    for (int r = 0; r < kGroup; ++r) q[r] = load32(row_at(rows + kGroup * g, r, offset));
    simd::transpose(q, v);
  }
  [[gnu::always_inline]] static void put(const __m512i v[8], P& p) { simd::store(v, p); }
  // Group g's 32 bytes at `offset` as columns: transposed into p.
  [[gnu::always_inline]] const P& columns(int g, std::size_t offset, P& p) const {
    __m512i v[8];
    load(g, offset, v);
    put(v, p);
    return p;
  }
  // Rows in place are prefetched by the GEMV (one pass ahead); nothing more here.
  void ahead(int, std::size_t, std::size_t) const {}
  // The f16 at `offset` in each of group g's rows, one float per lane (F16C: see halves() in
  // the AVX2 lane decoders for why its signalling-NaN quieting gives the same products).
  __m512 half(int g, std::size_t offset) const {
    alignas(32) std::uint16_t h[kGroup];
    for (int r = 0; r < kGroup; ++r) std::memcpy(h + r, row_at(rows + kGroup * g, r, offset), 2);
    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)));
  }
};

// An interleaved copy: group g starts at rows[16 g] (the slot of its first row), and the
// group's bytes at `offset` are columns at 16 offset, plain order.
struct Interleaved {
  using P = Columns;
  const void* const* rows;
  const std::uint8_t* at(int g, std::size_t offset) const { return row_at(rows, kGroup * g, 16 * offset); }
  [[gnu::always_inline]] void load(int g, std::size_t offset, __m512i v[8]) const {
    const std::uint8_t* p = at(g, offset);
    for (int i = 0; i < 8; ++i) v[i] = _mm512_loadu_si512(p + 64 * i);
  }
  [[gnu::always_inline]] static void put(const __m512i v[8], P& p) {
    for (int i = 0; i < 8; ++i) _mm512_store_si512(p.b + 64 * i, v[i]);
  }
  __m512 half(int g, std::size_t offset) const { return halves(ColumnsAt{at(g, offset)}, 0); }
  // Group g's bytes of row bytes [offset, offset + n) into L1 (prefetch_group).
  void ahead(int g, std::size_t offset, std::size_t n) const { prefetch_group(rows[kGroup * g], offset, n); }
  // The same read where they are.
  ColumnsAt columns(int g, std::size_t offset, P&) const { return {at(g, offset)}; }
};

// The groups' chains over 32 columns: a[g] = fma(x[c], op(g, c, float(column c of p[g])), a[g]).
template <bool kSigned, class P, class Op>
[[gnu::always_inline]] inline void chains(const P p[kGroups], const float* x, __m512 a[kGroups], const Op& op) {
#pragma GCC unroll 32
  for (int c = 0; c < 32; ++c) {
    const __m512 xv = _mm512_set1_ps(x[c]);
    for (int g = 0; g < kGroups; ++g)
      a[g] = _mm512_fmadd_ps(xv, op(g, c, floats(p[g], c, kSigned)), a[g]);
  }
}

// Q8_0 and Q4_0, blocks of 32 that start with their f16 d (kBytes a block): each element is
// q d. quants(src, g, u, p) puts group g's small integers of block u in p, as 32 columns.
template <std::size_t kBytes, class P, class Src, class Quants>
[[gnu::always_inline]] inline void dot_d32(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc,
                                           const Quants& quants) {
  __m512 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm512_loadu_ps(acc + kGroup * g);
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    __m512 d[kGroups];
    P p[kGroups];
    for (int g = 0; g < kGroups; ++g) {
      quants(src, g, u, p[g]);
      d[g] = src.half(g, u * kBytes);
    }
    chains<true>(p, x, a, [&](int g, int, __m512 f) { return _mm512_mul_ps(f, d[g]); });
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(acc + kGroup * g, a[g]);
}

// Q8_0 (34-byte blocks of 32): the 32 int8 after d (from an interleaved copy, read in place).
template <class Src>
void dot_q8_0(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc) {
  if constexpr (std::is_same_v<Src, Interleaved>)
    dot_d32<34, ColumnsAt>(src, k0, n, x, acc,
                           [](const Src& s, int g, std::size_t u, ColumnsAt& p) { p.b = s.at(g, u * 34 + 2); });
  else
    dot_d32<34, Plane>(src, k0, n, x, acc, [](const Src& s, int g, std::size_t u, Plane& p) { s.columns(g, u * 34 + 2, p); });
}

// Q4_0 (18-byte blocks of 32): the low nibbles of the 16 bytes after d are elements 0..15, the
// high ones 16..31, less 8.
template <class Src>
void dot_q4_0(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc) {
  if constexpr (std::is_same_v<Src, Interleaved>) {
    dot_d32<18, Columns>(src, k0, n, x, acc, [](const Src& s, int g, std::size_t u, Columns& p) {
      const __m512i low = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
      const std::uint8_t* b = s.at(g, u * 18 + 2);  // columns 0..15's bytes
      for (int i = 0; i < 4; ++i) {
        const __m512i v = _mm512_loadu_si512(b + 64 * i);
        _mm512_store_si512(p.b + 64 * i, _mm512_sub_epi8(_mm512_and_si512(v, low), eight));
        _mm512_store_si512(p.b + 256 + 64 * i, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), low), eight));
      }
    });
  } else {
    dot_d32<18, Plane>(src, k0, n, x, acc, [](const Src& s, int g, std::size_t u, Plane& p) {
      const __m128i low = _mm_set1_epi8(0x0F);
      __m256i q[16];
      for (int r = 0; r < kGroup; ++r) {
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row_at(s.rows + kGroup * g, r, u * 18 + 2)));
        q[r] = _mm256_sub_epi8(_mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low), _mm_and_si128(b, low)),
                               _mm256_set1_epi8(8));
      }
      simd::transpose_store(q, p);
    });
  }
}

// A Q4_K / Q5_K block's d sc_j and dmin m_j (j < 8), one lane a row, into s[j] and m[j]: the
// 6-bit sc_j and m_j unpacked from its 12 scale bytes (b[c]: byte 4 + c, 0..255) as
// scale_min_k4 does. Returns whether d and dmin are finite in every lane (k_fused).
[[gnu::always_inline]] inline bool k_scales(__m512 d, __m512 dmin, const __m512i b[12], float s[8][kGroup],
                                            float m[8][kGroup]) {
  const __m512 zero = _mm512_setzero_ps();
  const __m512i six = _mm512_set1_epi32(63), four = _mm512_set1_epi32(15);
  for (int i = 0; i < 8; ++i) {
    __m512i sc, mn;
    if (i < 4) {
      sc = _mm512_and_si512(b[i], six);
      mn = _mm512_and_si512(b[i + 4], six);
    } else {
      sc = _mm512_or_si512(_mm512_and_si512(b[i + 4], four), _mm512_slli_epi32(_mm512_srli_epi32(b[i - 4], 6), 4));
      mn = _mm512_or_si512(_mm512_srli_epi32(b[i + 4], 4), _mm512_slli_epi32(_mm512_srli_epi32(b[i], 6), 4));
    }
    _mm512_store_ps(s[i], _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
    _mm512_store_ps(m[i], _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(mn)));
  }
  return _mm512_cmp_ps_mask(_mm512_add_ps(_mm512_mul_ps(d, zero), _mm512_mul_ps(dmin, zero)), zero, _CMP_EQ_OQ) ==
         0xFFFF;
}

// Q4_K (144-byte blocks of 256) and Q5_K (176, kFive): sub-block j (32 elements) is the low
// (j even) or high nibbles of the bytes at 16 (Q5_K: 48) + 32 (j / 2), Q5_K adding bit j of the
// 32 bytes at 16 as 16; (d sc_j) q - dmin m_j, the 6-bit sc_j and m_j unpacked from the 12
// bytes at 4 as scale_min_k4 does. A block's header (its first 32 bytes) is transposed like
// the quants, so d, dmin and the scale bytes arrive one per lane.
template <bool kFive, class Src>
void dot_q45_k(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc) {
  constexpr std::size_t bytes = kFive ? 176 : 144, qs = kFive ? 48 : 16;
  const __m512i low = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
  // From a copy, Q5_K's quants are loaded where they lie at each sub-block; from rows in place
  // (loaded and transposed) they are kept: a pair of sub-blocks' nibbles and a block's bit planes.
  constexpr bool kInPlace = std::is_same_v<Src, Interleaved>;
  struct Kept {
    __m512i nib[kGroups][8], high[kGroups][8];
  };
  struct None {};
  [[maybe_unused]] std::conditional_t<kInPlace, None, Kept> kept;
  alignas(64) float s[kGroups][8][kGroup], m[kGroups][8][kGroup];  // the blocks' d sc_j and dmin m_j
  bool finite = true;  // the block's d and dmin in every group (k_fused)
  __m512 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm512_loadu_ps(acc + kGroup * g);
  typename Src::P p[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    const std::size_t blk = u / 8;
    const int j = static_cast<int>(u % 8);
    const bool first = u == k0 / 32;
    if (first || j == 0) finite = true;
    for (int g = 0; g < kGroups; ++g) {
      if (first || j == 0) {
        const auto& hdr = src.columns(g, blk * bytes, p[g]);
        __m512i b[12];
        for (int c = 0; c < 12; ++c) b[c] = widen(hdr, 4 + c, false);
        finite = k_scales(halves(hdr, 0), halves(hdr, 2), b, s[g], m[g]) && finite;
        if constexpr (kFive && !kInPlace) src.load(g, blk * bytes + 16, kept.high[g]);
      }
      const std::uint8_t* at_qs = nullptr;
      const std::uint8_t* at_qh = nullptr;
      if constexpr (kInPlace) {
        at_qs = src.at(g, blk * bytes + qs + 32 * (j / 2));
        at_qh = src.at(g, blk * bytes + 16);
      } else if (first || j % 2 == 0) {
        src.load(g, blk * bytes + qs + 32 * (j / 2), kept.nib[g]);
      }
      const __m128i bit = _mm_cvtsi32_si128(j);
      __m512i v[8];
      for (int i = 0; i < 8; ++i) {
        __m512i nb, hb;
        if constexpr (kInPlace) {
          nb = _mm512_loadu_si512(at_qs + 64 * i);
          hb = _mm512_loadu_si512(at_qh + 64 * i);
        } else {
          nb = kept.nib[g][i];
          hb = kFive ? kept.high[g][i] : nb;
        }
        v[i] = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(nb, 4) : nb, low);
        if constexpr (kFive) {
          const __m512i h = _mm512_and_si512(_mm512_srl_epi16(hb, bit), one);
          v[i] = _mm512_or_si512(v[i], _mm512_slli_epi16(h, 4));
        }
      }
      Src::put(v, p[g]);
    }
    // The weight: one fmsub where the block's scales are finite (k_fused, dequantize_simd.hpp).
    const auto run = [&](const auto& op) { chains<false>(p, x, a, op); };
    if (finite)
      run([&](int g, int, __m512 f) { return _mm512_fmsub_ps(_mm512_load_ps(s[g][j]), f, _mm512_load_ps(m[g][j])); });
    else
      run([&](int g, int, __m512 f) {
        return _mm512_sub_ps(_mm512_mul_ps(_mm512_load_ps(s[g][j]), f), _mm512_load_ps(m[g][j]));
      });
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(acc + kGroup * g, a[g]);
}

// Q4_K from a copy of 4-byte words (lane_dot_interleave_word: word w of a group's row r at
// 64 w + 4 r), the blocks as in dot_q45_k: one 64-byte load holds 4 consecutive bytes of each of
// the 16 rows, a row to a lane. Column c of sub-block j is byte c % 4 of each lane's word, its
// low nibble for j even and its high one for j odd: the word shifted right by 8 (c % 4) (+ 4),
// whose float a permute of 0..15 gives, as the permute reads only an index's low four bits. That
// is one shuffle a column, where bytes (a column's 16 rows in 16 bytes) take two, a widen and the
// permute: 0.49 -> 0.36 ns per 16 weights in L1 on the Zen 5, the fmsub and fma's own bound.
void dot_q4_k_words(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  const Interleaved src{rows};  // the same addressing: row bytes at `offset` at 16 offset
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i byte = _mm512_set1_epi32(0xFF);
  alignas(64) float s[kGroups][8][kGroup], m[kGroups][8][kGroup];  // the blocks' d sc_j and dmin m_j
  bool finite = true;  // the block's d and dmin in every group (k_fused)
  __m512 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm512_loadu_ps(acc + kGroup * g);
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    const std::size_t blk = u / 8;
    const int j = static_cast<int>(u % 8);
    if (u == k0 / 32 || j == 0) {
      finite = true;
      for (int g = 0; g < kGroups; ++g) {
        const std::uint8_t* hdr = src.at(g, blk * 144);  // words 0..3: d, dmin, the 12 scale bytes
        __m512i h[4], b[12];
        for (int i = 0; i < 4; ++i) h[i] = _mm512_loadu_si512(hdr + 64 * i);
        for (int c = 0; c < 12; ++c) b[c] = _mm512_and_si512(_mm512_srli_epi32(h[1 + c / 4], 8 * (c % 4)), byte);
        const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h[0]));
        const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h[0], 16)));
        finite = k_scales(d, dmin, b, s[g], m[g]) && finite;
      }
    }
    const std::uint8_t* q[kGroups];
    for (int g = 0; g < kGroups; ++g) q[g] = src.at(g, blk * 144 + 16 + 32 * (j / 2));
    // The nibble half is a template argument, not a flag: a flag left a test and branch at each
    // of the unrolled columns.
    const auto run = [&]<int kHigh>(const auto& op) {
#pragma GCC unroll 8
      for (int w = 0; w < 8; ++w) {
        __m512i v[kGroups];
        for (int g = 0; g < kGroups; ++g) v[g] = _mm512_loadu_si512(q[g] + 64 * w);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const __m512 xv = _mm512_set1_ps(x[4 * w + i]);
          constexpr int kShift = 4 * kHigh;
          for (int g = 0; g < kGroups; ++g) {
            const int sh = 8 * i + kShift;
            const __m512 f = _mm512_permutexvar_ps(sh ? _mm512_srli_epi32(v[g], static_cast<unsigned>(sh)) : v[g], iota);
            a[g] = _mm512_fmadd_ps(xv, op(g, f), a[g]);
          }
        }
      }
    };
    // The weight: one fmsub where the block's scales are finite (k_fused, dequantize_simd.hpp).
    const auto fused = [&](int g, __m512 f) { return _mm512_fmsub_ps(_mm512_load_ps(s[g][j]), f, _mm512_load_ps(m[g][j])); };
    const auto apart = [&](int g, __m512 f) {
      return _mm512_sub_ps(_mm512_mul_ps(_mm512_load_ps(s[g][j]), f), _mm512_load_ps(m[g][j]));
    };
    if (finite)
      j % 2 ? run.template operator()<1>(fused) : run.template operator()<0>(fused);
    else
      j % 2 ? run.template operator()<1>(apart) : run.template operator()<0>(apart);
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(acc + kGroup * g, a[g]);
}

// Q6_K (210-byte blocks of 256, two halves of 128): quarter t of half h takes the low (t < 2)
// or high nibbles of ql[64 h + 32 (t % 2) ..] and bits 2t, 2t+1 of qh[32 h ..], minus 32;
// (d sc_i) q with one int8 scale per 16 elements. The scales and d are the last 18 of the 32
// bytes ending the block, transposed.
template <class Src>
void dot_q6_k(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc) {
  const __m512i low = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(3), bias = _mm512_set1_epi8(32);
  // From a copy, a sub-block's ql and qh are loaded where they lie (kept between sub-blocks, they
  // are stored on the stack and loaded back: more stores than the plane's own); from rows in
  // place (loaded and transposed) a half's are kept: ql's two 32-byte runs and qh.
  constexpr bool kInPlace = std::is_same_v<Src, Interleaved>;
  struct Kept {
    __m512i lo[kGroups][2][8], hi[kGroups][8];
  };
  struct None {};
  [[maybe_unused]] std::conditional_t<kInPlace, None, Kept> kept;
  alignas(64) float s[kGroups][16][kGroup];  // the block's d sc_i
  __m512 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm512_loadu_ps(acc + kGroup * g);
  typename Src::P p[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    const std::size_t blk = u / 8;
    const int h = static_cast<int>(u % 8) / 4, t = static_cast<int>(u % 4);
    const bool first = u == k0 / 32;
    for (int g = 0; g < kGroups; ++g) {
      src.ahead(g, blk * 210 + 105 + (u % 8) * 27, 27);  // half a block on, an eighth (rounded up) a sub-block
      if (first || u % 8 == 0) {
        const auto& hdr = src.columns(g, blk * 210 + 178, p[g]);
        const __m512 d = halves(hdr, 30);
        for (int i = 0; i < 16; ++i) _mm512_store_ps(s[g][i], _mm512_mul_ps(d, _mm512_cvtepi32_ps(widen(hdr, 14 + i, true))));
      }
      const std::uint8_t* ql = nullptr;
      const std::uint8_t* qh = nullptr;
      if constexpr (kInPlace) {
        ql = src.at(g, blk * 210 + 64 * h + 32 * (t % 2));
        qh = src.at(g, blk * 210 + 128 + 32 * h);
      } else if (first || t == 0) {
        for (int e = 0; e < 2; ++e) src.load(g, blk * 210 + 64 * h + 32 * e, kept.lo[g][e]);
        src.load(g, blk * 210 + 128 + 32 * h, kept.hi[g]);
      }
      const __m128i shift = _mm_cvtsi32_si128(2 * t);
      __m512i v[8];
      for (int i = 0; i < 8; ++i) {
        __m512i l, hq;
        if constexpr (kInPlace) {
          l = _mm512_loadu_si512(ql + 64 * i);
          hq = _mm512_loadu_si512(qh + 64 * i);
        } else {
          l = kept.lo[g][t % 2][i];
          hq = kept.hi[g][i];
        }
        const __m512i lo4 = _mm512_and_si512(t / 2 ? _mm512_srli_epi16(l, 4) : l, low);
        const __m512i hi2 = _mm512_and_si512(_mm512_srl_epi16(hq, shift), two);
        v[i] = _mm512_sub_epi8(_mm512_or_si512(lo4, _mm512_slli_epi16(hi2, 4)), bias);
      }
      Src::put(v, p[g]);
    }
    const int i0 = 8 * h + 2 * t;
    chains<true>(p, x, a, [&](int g, int c, __m512 f) { return _mm512_mul_ps(_mm512_load_ps(s[g][i0 + c / 16]), f); });
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(acc + kGroup * g, a[g]);
}

// The lane dot over rows read from Src.
template <class Src, void (*Dot)(const Src&, std::size_t, std::size_t, const float*, float*)>
void on(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  Dot(Src{rows}, k0, n, x, acc);
}

template <class Src>
LaneDot lane_dot_on(std::uint32_t type) {
  switch (type) {
    case q8_0: return &on<Src, &dot_q8_0<Src>>;
    case q4_0: return &on<Src, &dot_q4_0<Src>>;
    case q4_k: return &on<Src, &dot_q45_k<false, Src>>;
    case q5_k: return &on<Src, &dot_q45_k<true, Src>>;
    case q6_k: return &on<Src, &dot_q6_k<Src>>;
    default: return nullptr;
  }
}

}  // namespace

LaneDot lane_dot_avx512(std::uint32_t type) { return lane_dot_on<Rows>(type); }

InterleavedDot lane_dot_interleaved_avx512(std::uint32_t type) {
  if (type == q4_k) return {&dot_q4_k_words, 4};
  return {lane_dot_on<Interleaved>(type), 1};
}

}  // namespace lowp::accuracy::ggml
