// AVX2 dots of llama.cpp's integer matmul (int_dots.hpp): each block's integer sums with byte
// multiply-adds (u8 x s8 pairs into int16, which cannot saturate here: at most 2 * 128 * 127,
// Q8_0's -128 against 127),
// then the block's float terms in the scalar order. Integer sums are exact in any order, so the
// bits are the scalar dots'.
#include <immintrin.h>

#include <cstring>

#include "io/ggml/dequantize_simd.hpp"
#include "io/ggml/ggml_types.hpp"
#include "io/ggml/int_dots.hpp"

namespace lowp::accuracy::ggml {
namespace {

std::int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

__m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

std::uint16_t half_bits(const std::uint8_t h[2]) {
  std::uint16_t v;
  std::memcpy(&v, h, 2);
  return v;
}

// F16C converts every finite f16 and infinity as f16_to_f32 does (a NaN stays a NaN).
float half(const std::uint8_t h[2]) { return _cvtsh_ss(half_bits(h)); }

// Byte masks for _mm256_shuffle_epi8 that copy one int16 lane of each 128-bit half to all 8 of
// that half's lanes: pick[j] lane j in both halves; pair[g] lane 2 g in the low half and
// 2 g + 1 in the high one.
struct Masks {
  __m256i pick[8], pair[4];
  Masks() {
    for (int j = 0; j < 8; ++j) pick[j] = _mm256_set1_epi16(static_cast<short>(2 * j | (2 * j + 1) << 8));
    for (int g = 0; g < 4; ++g)
      pair[g] = _mm256_set_m128i(_mm_set1_epi16(static_cast<short>((4 * g + 2) | (4 * g + 3) << 8)),
                                 _mm_set1_epi16(static_cast<short>(4 * g | (4 * g + 1) << 8)));
  }
};
const Masks& masks() {
  static const Masks m;
  return m;
}

// Q4_K's 8 6-bit scales and 8 6-bit mins from its 12 packed bytes (scale_min_k4 on 4 at once):
// bytes 0-3 hold scales 0-3 (low 6 bits) and 4-7's high 2 bits, bytes 4-7 mins 0-3 and 4-7's
// high 2 bits, bytes 8-11 scales 4-7's low 4 bits (low nibbles) and mins 4-7's (high).
void scales_mins_k4(const std::uint8_t* p, __m128i& sc, __m128i& mn) {
  std::uint32_t w[3];
  std::memcpy(w, p, 12);
  const std::uint32_t s0 = w[0] & 0x3F3F3F3F, s1 = (w[2] & 0x0F0F0F0F) | ((w[0] >> 6) & 0x03030303) << 4;
  const std::uint32_t m0 = w[1] & 0x3F3F3F3F, m1 = ((w[2] >> 4) & 0x0F0F0F0F) | ((w[1] >> 6) & 0x03030303) << 4;
  sc = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(s0 | static_cast<std::uint64_t>(s1) << 32)));
  mn = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(m0 | static_cast<std::uint64_t>(m1) << 32)));
}

std::int32_t hsum128(__m128i s) {
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// Q4_K, and Q5_K with its fifth bits: sub-block j's from bit j of each qh byte.
template <class Block, bool kFive>
float dot_k45(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const Block*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m1 = _mm256_set1_epi8(0x01);
  const Masks& k = masks();
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    __m128i sc, mn;
    scales_mins_k4(w[b].scales, sc, mn);
    const __m256i scales = _mm256_broadcastsi128_si256(sc);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFive) qh = load(w[b].qh);
    __m256i acc = _mm256_setzero_si256();
    for (int i = 0; i < 4; ++i) {
      const __m256i q = load(w[b].qs + 32 * i);
      __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      if constexpr (kFive) {  // bits 2 i and 2 i + 1 of each byte, moved to bit 4
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(qh, m1), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 1), m1), 4));
        qh = _mm256_srli_epi16(qh, 2);
      }
      lo = _mm256_maddubs_epi16(lo, load(a[b].qs + 64 * i));
      hi = _mm256_maddubs_epi16(hi, load(a[b].qs + 64 * i + 32));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(lo, _mm256_shuffle_epi8(scales, k.pick[2 * i])));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(hi, _mm256_shuffle_epi8(scales, k.pick[2 * i + 1])));
    }
    // The mins meet the sums of the activations' 32-element sub-blocks: pairs of bsums.
    const __m128i* bs = reinterpret_cast<const __m128i*>(a[b].bsums);
    const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128(bs), _mm_loadu_si128(bs + 1));
    const std::int32_t imin = hsum128(_mm_madd_epi16(mn, pairs));
    const float d = a[b].d * half(w[b].d), dmin = a[b].d * half(w[b].dmin);
    s += d * static_cast<float>(hsum(acc));
    s -= dmin * static_cast<float>(imin);
  }
  return s;
}

float dot_q6_k(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ6K*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
  const Masks& k = masks();
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    // The codes' offset: sum_j sc_j sum_{e in j} 32 a_e = 32 sum_j sc_j bsums_j.
    __m256i acc = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(sc, load(a[b].bsums)), 5));
    // Scales 0 .. 7 and 8 .. 15, each in both halves.
    const __m256i halves[2] = {_mm256_permute2x128_si256(sc, sc, 0x00), _mm256_permute2x128_si256(sc, sc, 0x11)};
    for (int h = 0; h < 2; ++h) {
      const __m256i half_scales = halves[h];
      const __m256i ql[2] = {load(w[b].ql + 64 * h), load(w[b].ql + 64 * h + 32)};
      const __m256i qh = load(w[b].qh + 32 * h);
      for (int g = 0; g < 4; ++g) {  // elements [128 h + 32 g, + 32): codes q + 32 in [0, 63]
        const __m256i lo = g < 2 ? _mm256_and_si256(ql[g], m4) : _mm256_and_si256(_mm256_srli_epi16(ql[g - 2], 4), m4);
        const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), m2), 4);
        const __m256i p = _mm256_maddubs_epi16(_mm256_or_si256(lo, hi), load(a[b].qs + 128 * h + 32 * g));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_shuffle_epi8(half_scales, k.pair[g])));
      }
    }
    s += (a[b].d * half(w[b].d)) * static_cast<float>(hsum(acc));
  }
  return s;
}

// Q4_0's and Q5_0's 16 bytes as 32 nibbles, element e in byte e: the low nibbles, then the high.
__m256i nibbles(const std::uint8_t qs[16]) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)), m4 = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
}

// Q5_0's and Q5_1's fifth bits as 0x10 in byte e for element e: byte e / 8 of qh spread, then
// its bit e % 8 tested.
__m256i fifth_bits(const std::uint8_t qh[4]) {
  std::uint32_t h;
  std::memcpy(&h, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(h)),
                                             _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

// kvalues_iq4nl in both 128-bit halves, for _mm256_shuffle_epi8 on nibbles.
__m256i iq4nl_table() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nl.data())));
}

// A block's 32 codes as signed bytes, element e in byte e.
__m256i codes(const BlockQ8_0& w) { return load(w.qs); }
__m256i codes(const BlockQ4_0& w) { return _mm256_sub_epi8(nibbles(w.qs), _mm256_set1_epi8(8)); }
__m256i codes(const BlockQ5_0& w) { return _mm256_sub_epi8(_mm256_or_si256(nibbles(w.qs), fifth_bits(w.qh)), _mm256_set1_epi8(16)); }
__m256i codes(const BlockQ4_1& w) { return nibbles(w.qs); }
__m256i codes(const BlockQ5_1& w) { return _mm256_or_si256(nibbles(w.qs), fifth_bits(w.qh)); }
__m256i codes(const BlockIQ4NL& w) { return _mm256_shuffle_epi8(iq4nl_table(), nibbles(w.qs)); }

// 32 signed codes q against 32 activation codes x, as 16 int16 sums of pairs: |q| times x with
// q's sign, u8 x s8 (|q| = 128 for -128 reads as 128 unsigned).
__m256i pair_sums(__m256i q, __m256i x) { return _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q)); }

// Q2_K and Q3_K: 2-bit codes at bits 2 g of 32 bytes per half h (elements [128 h + 32 g, + 32),
// sub-blocks of 16 with scales sc, 16 int16 lanes); the third bits of Q3_K in hmask, bit 4 h + g
// (set: + 0, clear: - 4, so the codes are u - 4 with u in [0, 7], and sum_j sc_j sum_e (u_e - 4)
// a_e = sum_j sc_j sum_e u_e a_e - 4 sum_j sc_j bsums_j).
template <bool kThird>
__m256i isums_k23(const std::uint8_t* qs, const std::uint8_t* hmask, __m256i sc, const std::int8_t* x) {
  const __m256i m3 = _mm256_set1_epi8(3), m1 = _mm256_set1_epi8(1);
  const Masks& k = masks();
  const __m256i halves[2] = {_mm256_permute2x128_si256(sc, sc, 0x00), _mm256_permute2x128_si256(sc, sc, 0x11)};
  __m256i acc = _mm256_setzero_si256();
  for (int h = 0; h < 2; ++h) {
    const __m256i q = load(qs + 32 * h);
    for (int g = 0; g < 4; ++g) {
      __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * g), m3);
      if constexpr (kThird)
        u = _mm256_or_si256(u, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(load(hmask), 4 * h + g), m1), 2));
      const __m256i p = _mm256_maddubs_epi16(u, load(x + 128 * h + 32 * g));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_shuffle_epi8(halves[h], k.pair[g])));
    }
  }
  return acc;
}

float dot_q2_k(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ2K*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales));
    const __m256i scales = _mm256_cvtepu8_epi16(_mm_and_si128(sc, m4)), mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), m4));
    const std::int32_t imin = hsum(_mm256_madd_epi16(mins, load(a[b].bsums)));
    const std::int32_t isum = hsum(isums_k23<false>(w[b].qs, nullptr, scales, a[b].qs));
    const float d = a[b].d * half(w[b].d), dmin = a[b].d * half(w[b].dmin);
    s += d * static_cast<float>(isum);
    s -= dmin * static_cast<float>(imin);
  }
  return s;
}

float dot_q3_k(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ3K*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    // The 16 6-bit scales: scale j's low 4 bits from byte j % 8 (nibble j / 8), its high 2 from
    // bits 2 (j / 4) of byte 8 + j % 4; four at a time in 32-bit words.
    std::uint32_t p[3];
    std::memcpy(p, w[b].scales, 12);
    const std::uint32_t lo = 0x0F0F0F0F, hi = 0x03030303;
    const __m128i packed = _mm_setr_epi32(static_cast<int>((p[0] & lo) | (p[2] & hi) << 4), static_cast<int>((p[1] & lo) | ((p[2] >> 2) & hi) << 4),
                                          static_cast<int>(((p[0] >> 4) & lo) | ((p[2] >> 4) & hi) << 4),
                                          static_cast<int>(((p[1] >> 4) & lo) | ((p[2] >> 6) & hi) << 4));
    const __m256i sc = _mm256_sub_epi16(_mm256_cvtepu8_epi16(packed), _mm256_set1_epi16(32));
    const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(sc, load(a[b].bsums)), 2);
    const __m256i acc = _mm256_sub_epi32(isums_k23<true>(w[b].qs, w[b].hmask, sc, a[b].qs), offset);
    s += (a[b].d * half(w[b].d)) * static_cast<float>(hsum(acc));
  }
  return s;
}

float dot_iq4_xs(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockIQ4XS*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  const __m256i m4 = _mm256_set1_epi8(0x0F), table = iq4nl_table();
  const Masks& k = masks();
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    alignas(16) std::int16_t ls[8];
    for (int j = 0; j < 8; ++j) ls[j] = static_cast<std::int16_t>(scale_iq4_xs(w[b].scales_h, w[b].scales_l, j));
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(ls)));
    __m256i acc = _mm256_setzero_si256();
    for (int j = 0; j < 8; j += 2) {  // sub-blocks j and j + 1: 16 bytes of nibbles each
      const __m256i q = load(w[b].qs + 16 * j);
      const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(q, m4));
      const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
      const __m256i c0 = _mm256_permute2x128_si256(lo, hi, 0x20), c1 = _mm256_permute2x128_si256(lo, hi, 0x31);
      const __m256i p0 = pair_sums(c0, load(a[b].qs + 32 * j)), p1 = pair_sums(c1, load(a[b].qs + 32 * j + 32));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p0, _mm256_shuffle_epi8(scales, k.pick[j])));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p1, _mm256_shuffle_epi8(scales, k.pick[j + 1])));
    }
    s += (a[b].d * half(w[b].d)) * static_cast<float>(hsum(acc));
  }
  return s;
}

// Blocks of 32 against Q8_0 (Q8_1 for the types with a min): each block's 8 lanes of int32 sums
// (lane l: elements 4 l .. 4 l + 3) fused-multiplied by w.d a.d into 8 float lanes, the lanes
// then summed as ggml's hsum_float_8, plus the min terms' chain (int_dots.cpp's order).
template <class Block, class Act>
float dot_32(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const Block*>(wv);
  const auto* a = static_cast<const Act*>(av);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  float mins = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) {
    const __m256i isums = _mm256_madd_epi16(pair_sums(codes(w[b]), load(a[b].qs)), ones);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(half(w[b].d) * half(a[b].d)), _mm256_cvtepi32_ps(isums), acc);
    if constexpr (requires { w[b].m; }) mins += half(w[b].m) * half(a[b].s);
  }
  __m128 r = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r) + mins;
}

}  // namespace

IntDot int_dot_avx2(std::uint32_t type) {
  switch (type) {
    case q4_0: return dot_32<BlockQ4_0, BlockQ8_0>;
    case q5_0: return dot_32<BlockQ5_0, BlockQ8_0>;
    case q8_0: return dot_32<BlockQ8_0, BlockQ8_0>;
    case iq4_nl: return dot_32<BlockIQ4NL, BlockQ8_0>;
    case q4_1: return dot_32<BlockQ4_1, BlockQ8_1>;
    case q5_1: return dot_32<BlockQ5_1, BlockQ8_1>;
    case q4_k: return dot_k45<BlockQ4K, false>;
    case q5_k: return dot_k45<BlockQ5K, true>;
    case q6_k: return dot_q6_k;
    case q2_k: return dot_q2_k;
    case q3_k: return dot_q3_k;
    case iq4_xs: return dot_iq4_xs;
    default: return nullptr;
  }
}

}  // namespace lowp::accuracy::ggml
