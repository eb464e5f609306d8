#include "io/ggml/int_dots.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <cmath>
#include <cstring>
#include <limits>

#include "io/ggml/dequantize_simd.hpp"
#include "io/ggml/ggml_types.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp::accuracy::ggml {
namespace {

// Round half to even, as ggml's nearest_int (|v| < 2^22): adding 1.5 * 2^23 leaves the integer in
// the significand's low bits.
int nearest(float v) {
  const float t = v + 12582912.0f;
  std::int32_t i;
  std::memcpy(&i, &t, 4);
  return (i & 0x007FFFFF) - 0x00400000;
}

void set_half(std::uint8_t h[2], std::uint16_t v) { std::memcpy(h, &v, 2); }

// ggml's hsum_float_8: the upper four lanes plus the lower, then pairs of those.
float lane_tree(const float acc[8]) {
  const float r0 = acc[4] + acc[0], r1 = acc[5] + acc[1], r2 = acc[6] + acc[2], r3 = acc[7] + acc[3];
  return (r0 + r2) + (r1 + r3);
}

}  // namespace

void quantize_q8_k(const float* x, std::size_t n, void* out) {
  auto* y = static_cast<BlockQ8K*>(out);
  for (std::size_t b = 0; b < n / 256; ++b, x += 256) {
    BlockQ8K& o = y[b];
    float amax = 0.0f, max = 0.0f;
    bool finite = true;
    for (int j = 0; j < 256; ++j) {
      const float ax = std::fabs(x[j]);
      finite = finite && ax <= std::numeric_limits<float>::max();
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    std::memset(o.qs, 0, sizeof o.qs);
    std::memset(o.bsums, 0, sizeof o.bsums);
    if (!finite || amax == 0.0f) {
      o.d = finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < 256; ++j) o.qs[j] = static_cast<std::int8_t>(std::min(127, nearest(iscale * x[j])));
    for (int j = 0; j < 16; ++j) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += o.qs[16 * j + i];
      o.bsums[j] = static_cast<std::int16_t>(s);
    }
    o.d = 1.0f / iscale;
  }
}

namespace {
// Q8_0's and Q8_1's shared part: 32 codes and d (stored as f16); returns d before that rounding
// and sets `sum` to the codes' sum, or returns NaN for a block with a NaN or an infinity.
float quantize_32(const float* x, std::int8_t qs[32], std::uint8_t d[2], int& sum) {
  float amax = 0.0f;
  bool finite = true;
  for (int j = 0; j < 32; ++j) {
    const float ax = std::fabs(x[j]);
    finite = finite && ax <= std::numeric_limits<float>::max();
    amax = std::max(amax, ax);
  }
  std::memset(qs, 0, 32);
  sum = 0;
  if (!finite) {
    set_half(d, 0x7E00);  // NaN
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float scale = amax / 127.0f;
  set_half(d, f32_to_f16(scale));
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < 32; ++j) sum += qs[j] = static_cast<std::int8_t>(std::clamp(nearest(x[j] * id), -128, 127));
  return scale;
}
}  // namespace

void quantize_q8_0(const float* x, std::size_t n, void* out) {
  auto* y = static_cast<BlockQ8_0*>(out);
  int sum;
  for (std::size_t b = 0; b < n / 32; ++b, x += 32) quantize_32(x, y[b].qs, y[b].d, sum);
}

void quantize_q8_1(const float* x, std::size_t n, void* out) {
  auto* y = static_cast<BlockQ8_1*>(out);
  int sum;
  for (std::size_t b = 0; b < n / 32; ++b, x += 32) {
    const float d = quantize_32(x, y[b].qs, y[b].d, sum);
    set_half(y[b].s, std::isnan(d) ? std::uint16_t{0x7E00} : f32_to_f16(d * static_cast<float>(sum)));
  }
}

namespace {
// Q4_K and Q5_K: sub-block j's code of element i (j < 8, i < 32).
int code_q4_k(const BlockQ4K& w, int j, int i) {
  const std::uint8_t q = w.qs[32 * (j / 2) + i];
  return j % 2 ? q >> 4 : q & 0x0F;
}
int code_q5_k(const BlockQ5K& w, int j, int i) {
  const std::uint8_t q = w.qs[32 * (j / 2) + i];
  return (j % 2 ? q >> 4 : q & 0x0F) | ((w.qh[i] >> j) & 1) << 4;
}

template <class Block, int (*code)(const Block&, int, int)>
float dot_k45(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const Block*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    std::int32_t isum = 0, imin = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      scale_min_k4(j, w[b].scales, sc, mn);
      std::int32_t dot = 0;
      for (int i = 0; i < 32; ++i) dot += code(w[b], j, i) * a[b].qs[32 * j + i];
      isum += sc * dot;
      imin += mn * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
    }
    const float d = a[b].d * half_at(w[b].d), dmin = a[b].d * half_at(w[b].dmin);
    s += d * static_cast<float>(isum);
    s -= dmin * static_cast<float>(imin);
  }
  return s;
}

// Blocks of 32 against Q8_0 (Q8_1 for the types with a min m): code(w, e) element e's code.
// Eight lanes, lane l the elements 4 l .. 4 l + 3 of every block, as llama.cpp's x86 code sums
// them (tinyBLAS and the AVX2 vec_dot): acc_l = fma(w.d a.d, float(isum_l), acc_l) block by
// block, then its tree ((acc_0 + acc_4) + (acc_2 + acc_6)) + ((acc_1 + acc_5) + (acc_3 + acc_7)),
// plus the min terms' own chain.
template <class Block, class Act, int (*code)(const Block&, int)>
float dot_32(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const Block*>(wv);
  const auto* a = static_cast<const Act*>(av);
  float acc[8] = {}, mins = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) {
    const float d = half_at(w[b].d) * half_at(a[b].d);
    for (int l = 0; l < 8; ++l) {
      std::int32_t isum = 0;
      for (int e = 4 * l; e < 4 * l + 4; ++e) isum += code(w[b], e) * a[b].qs[e];
      acc[l] = std::fma(d, static_cast<float>(isum), acc[l]);
    }
    if constexpr (requires { w[b].m; }) mins += half_at(w[b].m) * half_at(a[b].s);
  }
  return lane_tree(acc) + mins;
}

// Q4_0's and Q5_0's element e: the low nibble of qs[e] (e < 16), else the high one of qs[e - 16].
int nibble(const std::uint8_t qs[16], int e) { return e < 16 ? qs[e] & 0x0F : qs[e - 16] >> 4; }
int code_q8_0(const BlockQ8_0& w, int e) { return w.qs[e]; }
int code_q4_0(const BlockQ4_0& w, int e) { return nibble(w.qs, e) - 8; }
int fifth(const std::uint8_t qh[4], int e) {  // Q5_0's and Q5_1's bit of element e, as 16
  std::uint32_t h;
  std::memcpy(&h, qh, 4);
  return static_cast<int>((h >> e) & 1) << 4;
}
int code_q5_0(const BlockQ5_0& w, int e) { return (nibble(w.qs, e) | fifth(w.qh, e)) - 16; }
int code_q4_1(const BlockQ4_1& w, int e) { return nibble(w.qs, e); }
int code_q5_1(const BlockQ5_1& w, int e) { return nibble(w.qs, e) | fifth(w.qh, e); }
int code_iq4_nl(const BlockIQ4NL& w, int e) { return kIq4nl[nibble(w.qs, e)]; }

// Q2_K and Q3_K: element e's 2 low bits, at bits 2 g of byte 32 h + l (h = e / 128, g = e % 128
// / 32, l = e % 32); Q3_K's third bit at bit 4 h + g of hmask[l].
int low2(const std::uint8_t qs[64], int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3; }
int code_q3_k(const BlockQ3K& w, int e) {
  return low2(w.qs, e) - ((w.hmask[e % 32] >> (4 * (e / 128) + e % 128 / 32)) & 1 ? 0 : 4);
}
int sub_scale_q3_k(const BlockQ3K& w, int j) { return scale_q3_k(w.scales, j); }
int sub_scale_iq4_xs(const BlockIQ4XS& w, int j) { return scale_iq4_xs(w.scales_h, w.scales_l, j); }
}  // namespace

float dot_q4_k_q8_k(const void* w, const void* a, std::size_t n) { return dot_k45<BlockQ4K, code_q4_k>(w, a, n); }
float dot_q5_k_q8_k(const void* w, const void* a, std::size_t n) { return dot_k45<BlockQ5K, code_q5_k>(w, a, n); }

float dot_q6_k_q8_k(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ6K*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    std::int32_t isum = 0;
    for (int j = 0; j < 16; ++j) {  // sub-block j: elements [16 j, 16 j + 16)
      std::int32_t dot = 0;
      for (int e = 16 * j; e < 16 * j + 16; ++e) {
        const int h = e / 128, g = e % 128 / 32, l = e % 32;  // half, quarter, position
        const std::uint8_t lo = w[b].ql[64 * h + 32 * (g % 2) + l];
        const int q = ((g < 2 ? lo & 0x0F : lo >> 4) | ((w[b].qh[32 * h + l] >> (2 * g)) & 3) << 4) - 32;
        dot += q * a[b].qs[e];
      }
      isum += w[b].scales[j] * dot;
    }
    s += (a[b].d * half_at(w[b].d)) * static_cast<float>(isum);
  }
  return s;
}

float dot_q8_0_q8_0(const void* w, const void* a, std::size_t n) { return dot_32<BlockQ8_0, BlockQ8_0, code_q8_0>(w, a, n); }
float dot_q4_0_q8_0(const void* w, const void* a, std::size_t n) { return dot_32<BlockQ4_0, BlockQ8_0, code_q4_0>(w, a, n); }
float dot_q5_0_q8_0(const void* w, const void* a, std::size_t n) { return dot_32<BlockQ5_0, BlockQ8_0, code_q5_0>(w, a, n); }
float dot_iq4_nl_q8_0(const void* w, const void* a, std::size_t n) { return dot_32<BlockIQ4NL, BlockQ8_0, code_iq4_nl>(w, a, n); }
float dot_q4_1_q8_1(const void* w, const void* a, std::size_t n) { return dot_32<BlockQ4_1, BlockQ8_1, code_q4_1>(w, a, n); }
float dot_q5_1_q8_1(const void* w, const void* a, std::size_t n) { return dot_32<BlockQ5_1, BlockQ8_1, code_q5_1>(w, a, n); }

float dot_q2_k_q8_k(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ2K*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    std::int32_t isum = 0, imin = 0;
    for (int j = 0; j < 16; ++j) {  // sub-block j: elements [16 j, 16 j + 16)
      std::int32_t dot = 0;
      for (int e = 16 * j; e < 16 * j + 16; ++e) dot += low2(w[b].qs, e) * a[b].qs[e];
      isum += (w[b].scales[j] & 0x0F) * dot;
      imin += (w[b].scales[j] >> 4) * a[b].bsums[j];
    }
    const float d = a[b].d * half_at(w[b].d), dmin = a[b].d * half_at(w[b].dmin);
    s += d * static_cast<float>(isum);
    s -= dmin * static_cast<float>(imin);
  }
  return s;
}

namespace {
// Q3_K and IQ4_XS: sub-blocks of `sub` elements with signed scales, one float term per block.
template <class Block, int sub, int (*code)(const Block&, int), int (*scale)(const Block&, int)>
float dot_scaled(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const Block*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    std::int32_t isum = 0;
    for (int j = 0; j < 256 / sub; ++j) {
      std::int32_t dot = 0;
      for (int e = sub * j; e < sub * j + sub; ++e) dot += code(w[b], e) * a[b].qs[e];
      isum += scale(w[b], j) * dot;
    }
    s += (a[b].d * half_at(w[b].d)) * static_cast<float>(isum);
  }
  return s;
}
int code_iq4_xs(const BlockIQ4XS& w, int e) { return kIq4nl[nibble(w.qs + 16 * (e / 32), e % 32)]; }
}  // namespace

float dot_q3_k_q8_k(const void* w, const void* a, std::size_t n) { return dot_scaled<BlockQ3K, 16, code_q3_k, sub_scale_q3_k>(w, a, n); }
float dot_iq4_xs_q8_k(const void* w, const void* a, std::size_t n) {
  return dot_scaled<BlockIQ4XS, 32, code_iq4_xs, sub_scale_iq4_xs>(w, a, n);
}

namespace {
struct Entry {
  std::uint32_t type;
  quant::ActProduct product;  // with the scalar dot
};
constexpr std::size_t kQ8K = sizeof(BlockQ8K), kQ80 = sizeof(BlockQ8_0), kQ81 = sizeof(BlockQ8_1);
const Entry kProducts[] = {
    {q4_0, {32, kQ80, quantize_q8_0, dot_q4_0_q8_0}},     {q5_0, {32, kQ80, quantize_q8_0, dot_q5_0_q8_0}},
    {q8_0, {32, kQ80, quantize_q8_0, dot_q8_0_q8_0}},     {iq4_nl, {32, kQ80, quantize_q8_0, dot_iq4_nl_q8_0}},
    {q4_1, {32, kQ81, quantize_q8_1, dot_q4_1_q8_1}},     {q5_1, {32, kQ81, quantize_q8_1, dot_q5_1_q8_1}},
    {q2_k, {256, kQ8K, quantize_q8_k, dot_q2_k_q8_k}},    {q3_k, {256, kQ8K, quantize_q8_k, dot_q3_k_q8_k}},
    {q4_k, {256, kQ8K, quantize_q8_k, dot_q4_k_q8_k}},    {q5_k, {256, kQ8K, quantize_q8_k, dot_q5_k_q8_k}},
    {q6_k, {256, kQ8K, quantize_q8_k, dot_q6_k_q8_k}},    {iq4_xs, {256, kQ8K, quantize_q8_k, dot_iq4_xs_q8_k}}};
constexpr std::size_t kCount = std::size(kProducts);
}  // namespace

const quant::ActProduct* int_product(std::uint32_t type, Isa isa) {
  for (std::size_t i = 0; i < kCount; ++i) {
    if (kProducts[i].type != type) continue;
    if (isa == Isa::scalar) return &kProducts[i].product;
    // The same with the AVX2 dot where there is one, made the first time a CPU with AVX2 asks.
    static const std::array<quant::ActProduct, kCount> simd = [] {
      std::array<quant::ActProduct, kCount> v;
      for (std::size_t j = 0; j < kCount; ++j) {
        v[j] = kProducts[j].product;
        if (const IntDot d = int_dot_avx2(kProducts[j].type)) v[j].dot = d;
      }
      return v;
    }();
    return &simd[i];
  }
  return nullptr;
}

}  // namespace lowp::accuracy::ggml
