// AVX2 lane dots (ggml_types.hpp's LaneDot) of Q4_0, Q8_0, Q4_K, Q5_K and Q6_K: the one-row
// GEMV's decode and fma chains in one pass, 64 rows as eight chains of 8 (row r of a chain in
// lane r; eight independent chains hide the fma's latency). For each 32 columns a chain's rows'
// small integers are made bytewise, column c's 8 bytes widen to a float per lane and take the
// scalar decoder's float operations with one scale per lane, and acc = fma(x_c, w, acc) follows
// at once instead of a store to a tile. Every weight is bitwise dequantize()'s float and every
// chain the scalar fma chain over k in order. Compiled with -ffp-contract=off like the decoders.
//
// Each dot reads its rows from one of two sources, in groups of 16 rows (chains 2G and 2G + 1):
// rows side by side in their own layout (Rows: each chain's 8 rows' bytes transposed in
// registers, as the AVX2 lane decoders do), or a copy whose groups of 16 rows are already
// transposed (Interleaved: byte b of row r at 16 b + r, as InterleavedRows lays them), where a
// column's 8 bytes for a chain are a plain 8-byte load. The small integers are made by the same
// bytewise operations on either layout.
#include <immintrin.h>

#include <type_traits>

#include "io/ggml/byte_lanes_avx2.hpp"
#include "io/ggml/dequantize_simd.hpp"

namespace lowp::accuracy::ggml {
namespace {

using namespace avx2;

constexpr int kGroup = 8;                                        // rows per chain (lanes of a register)
constexpr int kChains = static_cast<int>(kLaneDotRows) / kGroup;  // chain g: rows 8 g ..
constexpr int kGroups = kChains / 2;                              // groups of 16 rows: chains 2G, 2G + 1
static_assert(2 * kGroup == static_cast<int>(kLaneDotInterleave), "an interleaved group is two chains");

__m128i load8(const std::uint8_t* p) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)); }

// 32 columns of a group read where they lie: column c's 16 bytes at b + 16 c, those of chain
// 2G + h at + 8 h (an interleaved copy's bytes in place).
template <bool kSigned = true>
struct ColumnsAt {
  const std::uint8_t* b = nullptr;
  __m256i widen(int h, int c) const {
    const __m128i v = load8(b + 16 * c + 8 * h);
    return kSigned ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
  }
};
// The same computed from them (the small integers of 32 columns, signed).
struct Columns16 {
  alignas(32) std::uint8_t b[512];
  __m256i widen(int h, int c) const { return ColumnsAt<true>{b}.widen(h, c); }
};
// A group's two chains' transposed bytes (Rows).
struct Transposed {
  Columns t[2];
  __m256i widen(int h, int c) const { return t[h].widen(c); }
};

// Rows side by side: group G's rows are rows[16 G ..].
struct Rows {
  using P = Transposed;
  const void* const* rows;
  const void* const* chain(int g) const { return rows + kGroup * g; }
  // q(load) makes 32 small integers of each row from its bytes (load(o): the row's 32 bytes at
  // offset + o), bytewise; they are transposed into p.
  template <class Quants>
  void quants(int G, std::size_t offset, P& p, const Quants& q) const {
    for (int h = 0; h < 2; ++h) {
      __m256i in[kGroup], v[kGroup];
      for (int r = 0; r < kGroup; ++r) {
        const std::uint8_t* b = row_at(chain(2 * G + h), r, offset);
        in[r] = q([b](std::size_t o) { return load32(b + o); });
      }
      transpose_bytes(in, v);
      p.t[h].store(v);
    }
  }
  __m256 half(int g, std::size_t offset) const { return halves(chain(g), offset); }
  void header(int g, std::size_t offset, __m128i col[16]) const { columns16(chain(g), offset, col); }
  void ahead(int, std::size_t, std::size_t) const {}  // the GEMV prefetches rows in place
};

// An interleaved copy: group G starts at rows[16 G] (the slot of its first row), and its bytes
// at `offset` are columns at 16 offset.
struct Interleaved {
  using P = Columns16;
  const void* const* rows;
  const std::uint8_t* at(int G, std::size_t offset) const { return row_at(rows, 2 * kGroup * G, 16 * offset); }
  // The same q on the group's bytes (load(o): 32 bytes of columns offset + o ..), 32 at a time.
  template <class Quants>
  void quants(int G, std::size_t offset, P& p, const Quants& q) const {
    const std::uint8_t* s = at(G, offset);
    for (int i = 0; i < 16; ++i)
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.b + 32 * i),
                         q([s, i](std::size_t o) { return load32(s + 16 * o + 32 * i); }));
  }
  __m128i column(int g, std::size_t offset) const { return load8(at(g / 2, offset) + 8 * (g % 2)); }
  // The f16 at `offset` of chain g's rows, a float per lane (F16C: see halves()).
  __m256 half(int g, std::size_t offset) const {
    return _mm256_cvtph_ps(_mm_unpacklo_epi8(column(g, offset), column(g, offset + 1)));
  }
  void header(int g, std::size_t offset, __m128i col[16]) const {
    for (int c = 0; c < 16; ++c) col[c] = column(g, offset + c);
  }
  // Group G's bytes of row bytes [offset, offset + n) into L1 (prefetch_group).
  void ahead(int G, std::size_t offset, std::size_t n) const { prefetch_group(rows[2 * kGroup * G], offset, n); }
};

// The chains over 32 columns: a[g] = fma(x[c], op(g, c, float(bits(column c of chain g))), a[g]),
// chain g's columns in half g % 2 of p[g / 2]; kAtOnce chains at a time (Q4_K's, Q5_K's and
// Q6_K's two scales a chain then stay in the 16 registers with the accumulators: 6.1-6.5 GB/s
// in cache against 5.3 for all eight, where GCC spilled accumulators).
template <int kAtOnce = kChains, class P, class Op, class Bits>
[[gnu::always_inline]] inline void chains(const P p[kGroups], const float* x, __m256 a[kChains], const Op& op,
                                          const Bits& bits) {
  for (int g0 = 0; g0 < kChains; g0 += kAtOnce)
#pragma GCC unroll 32
    for (int c = 0; c < 32; ++c) {
      const __m256 xv = _mm256_set1_ps(x[c]);
      for (int g = g0; g < g0 + kAtOnce; ++g)
        a[g] = _mm256_fmadd_ps(xv, op(g, c, _mm256_cvtepi32_ps(bits(p[g / 2].widen(g % 2, c)))), a[g]);
    }
}
template <int kAtOnce = kChains, class P, class Op>
[[gnu::always_inline]] inline void chains(const P p[kGroups], const float* x, __m256 a[kChains], const Op& op) {
  chains<kAtOnce>(p, x, a, op, [](__m256i v) { return v; });
}

// Q8_0 and Q4_0, blocks of 32 that start with their f16 d (kBytes a block): each element is
// q d. quants(G, u, p) puts group G's small integers of block u in p, as 32 columns.
template <std::size_t kBytes, class P, class Src, class Quants>
[[gnu::always_inline]] inline void dot_d32(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc,
                                           const Quants& quants) {
  __m256 a[kChains];
  for (int g = 0; g < kChains; ++g) a[g] = _mm256_loadu_ps(acc + kGroup * g);
  P p[kGroups];
  __m256 d[kChains];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    for (int G = 0; G < kGroups; ++G) quants(G, u, p[G]);
    for (int g = 0; g < kChains; ++g) d[g] = src.half(g, u * kBytes);
    chains(p, x, a, [&](int g, int, __m256 f) { return _mm256_mul_ps(f, d[g]); });
  }
  for (int g = 0; g < kChains; ++g) _mm256_storeu_ps(acc + kGroup * g, a[g]);
}

// Q8_0 (34-byte blocks of 32): the 32 int8 after d (from an interleaved copy, read in place).
template <class Src>
void dot_q8_0(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc) {
  if constexpr (std::is_same_v<Src, Interleaved>)
    dot_d32<34, ColumnsAt<>>(src, k0, n, x, acc, [&](int G, std::size_t u, ColumnsAt<>& p) { p.b = src.at(G, u * 34 + 2); });
  else
    dot_d32<34, Transposed>(src, k0, n, x, acc, [&](int G, std::size_t u, Transposed& p) {
      src.quants(G, u * 34 + 2, p, [](const auto& load) { return load(0); });
    });
}

// Q4_0 (18-byte blocks of 32): the low nibbles of the 16 bytes after d are elements 0..15, the
// high ones 16..31, less 8.
template <class Src>
void dot_q4_0(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc) {
  if constexpr (std::is_same_v<Src, Interleaved>) {
    dot_d32<18, Columns16>(src, k0, n, x, acc, [&](int G, std::size_t u, Columns16& p) {
      const __m256i low = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
      const std::uint8_t* b = src.at(G, u * 18 + 2);  // columns 0..15's bytes
      for (int i = 0; i < 8; ++i) {
        const __m256i v = load32(b + 32 * i);
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.b + 32 * i), _mm256_sub_epi8(_mm256_and_si256(v, low), eight));
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.b + 256 + 32 * i),
                           _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(v, 4), low), eight));
      }
    });
  } else {
    dot_d32<18, Transposed>(src, k0, n, x, acc, [&](int G, std::size_t u, Transposed& p) {
      const __m128i low = _mm_set1_epi8(0x0F);
      for (int h = 0; h < 2; ++h) {
        __m256i q[kGroup], v[kGroup];
        for (int r = 0; r < kGroup; ++r) {
          const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row_at(src.chain(2 * G + h), r, u * 18 + 2)));
          q[r] = _mm256_sub_epi8(_mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low), _mm_and_si128(b, low)),
                                 _mm256_set1_epi8(8));
        }
        transpose_bytes(q, v);
        p.t[h].store(v);
      }
    });
  }
}

// Q4_K (144-byte blocks of 256) and Q5_K (176, kFive): sub-block j is the low (j even) or high
// nibbles of the 32 bytes at 16 (Q5_K: 48) + 32 (j / 2), Q5_K adding bit j of the 32 bytes at 16
// as 16; (d sc_j) q - dmin m_j with sc_j and m_j unpacked from the 12 bytes at 4 (k_scales),
// for each chain's 8 rows at a block's start.
template <bool kFive, class Src>
void dot_q45_k(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc) {
  constexpr std::size_t bytes = kFive ? 176 : 144, qs = kFive ? 48 : 16;
  // Q4_K from an interleaved copy: a column's nibbles are taken after the widen, from the copy
  // in place, as the AVX-512 dot does (there the float is a permute of 0..15).
  constexpr bool kDirect = !kFive && std::is_same_v<Src, Interleaved>;
  const __m256i low = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1), low32 = _mm256_set1_epi32(0x0F);
  __m256 s[kChains][8], m[kChains][8];  // the blocks' d sc_j and dmin m_j
  bool finite = true;                    // the block's d and dmin in every chain (k_fused)
  __m256 a[kChains];
  for (int g = 0; g < kChains; ++g) a[g] = _mm256_loadu_ps(acc + kGroup * g);
  std::conditional_t<kDirect, ColumnsAt<false>, typename Src::P> p[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    const std::size_t blk = u / 8;
    const int j = static_cast<int>(u % 8);
    if (u == k0 / 32 || j == 0) {
      finite = true;
      for (int g = 0; g < kChains; ++g) {
        __m128i col[16];
        src.header(g, blk * bytes, col);
        finite = k_scales(col, s[g], m[g]) && finite;
      }
    }
    for (int G = 0; G < kGroups; ++G) {
      if constexpr (kDirect) {
        p[G].b = src.at(G, blk * bytes + qs + 32 * (j / 2));
      } else {
        const __m128i bit = _mm_cvtsi32_si128(j);
        src.quants(G, blk * bytes, p[G], [&](const auto& load) {
          const __m256i v = load(qs + 32 * (j / 2));
          __m256i q = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(v, 4) : v, low);
          if constexpr (kFive) {
            const __m256i h = _mm256_and_si256(_mm256_srl_epi16(load(16), bit), one);
            q = _mm256_or_si256(q, _mm256_slli_epi16(h, 4));
          }
          return q;
        });
      }
    }
    // The weight: one fmsub where the block's scales are finite (k_fused, dequantize_simd.hpp).
    // (The nibble's choice outside the chains: inside, GCC tested j at every column.)
    const auto run = [&](const auto& op) {
      if constexpr (!kDirect)
        chains<4>(p, x, a, op);
      else if (j % 2)
        chains<4>(p, x, a, op, [](__m256i v) { return _mm256_srli_epi32(v, 4); });
      else
        chains<4>(p, x, a, op, [&](__m256i v) { return _mm256_and_si256(v, low32); });
    };
    if (finite)
      run([&](int g, int, __m256 f) { return _mm256_fmsub_ps(s[g][j], f, m[g][j]); });
    else
      run([&](int g, int, __m256 f) { return _mm256_sub_ps(_mm256_mul_ps(s[g][j], f), m[g][j]); });
  }
  for (int g = 0; g < kChains; ++g) _mm256_storeu_ps(acc + kGroup * g, a[g]);
}

// Q6_K (210-byte blocks of 256, two halves of 128): quarter t of half h takes the low (t < 2) or
// high nibbles of ql[64 h + 32 (t % 2) ..] and bits 2t, 2t+1 of qh[32 h ..], minus 32; (d sc_i) q
// with one int8 scale per 16 elements (the 16 bytes at 192, d at 208).
template <class Src>
void dot_q6_k(const Src& src, std::size_t k0, std::size_t n, const float* x, float* acc) {
  const __m256i low = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  __m256 s[kChains][16];  // the block's d sc_i
  __m256 a[kChains];
  for (int g = 0; g < kChains; ++g) a[g] = _mm256_loadu_ps(acc + kGroup * g);
  typename Src::P p[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    const std::size_t blk = u / 8;
    const int h = static_cast<int>(u % 8) / 4, q4 = static_cast<int>(u % 4);
    const __m128i shift_lo = _mm_cvtsi32_si128(4 * (q4 / 2)), shift_hi = _mm_cvtsi32_si128(2 * q4);
    if (u == k0 / 32 || u % 8 == 0)
      for (int g = 0; g < kChains; ++g) {
        const __m256 d = src.half(g, blk * 210 + 208);
        __m128i col[16];
        src.header(g, blk * 210 + 192, col);
        for (int i = 0; i < 16; ++i) s[g][i] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(col[i])));
      }
    for (int G = 0; G < kGroups; ++G) {
      src.ahead(G, blk * 210 + 105 + (u % 8) * 27, 27);  // half a block on, an eighth (rounded up) a sub-block
      src.quants(G, blk * 210, p[G], [&](const auto& load) {
        const __m256i lo4 = _mm256_and_si256(_mm256_srl_epi16(load(64 * h + 32 * (q4 % 2)), shift_lo), low);
        const __m256i hi2 = _mm256_and_si256(_mm256_srl_epi16(load(128 + 32 * h), shift_hi), two);
        return _mm256_sub_epi8(_mm256_or_si256(lo4, _mm256_slli_epi16(hi2, 4)), bias);
      });
    }
    const int i0 = 8 * h + 2 * q4;
    chains<4>(p, x, a, [&](int g, int c, __m256 f) { return _mm256_mul_ps(s[g][i0 + c / 16], f); });
  }
  for (int g = 0; g < kChains; ++g) _mm256_storeu_ps(acc + kGroup * g, a[g]);
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

LaneDot lane_dot_avx2(std::uint32_t type) { return lane_dot_on<Rows>(type); }

LaneDot lane_dot_interleaved_avx2(std::uint32_t type) { return lane_dot_on<Interleaved>(type); }

}  // namespace lowp::accuracy::ggml
