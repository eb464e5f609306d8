#include "io/ggml/int_dots.hpp"

#include <algorithm>
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

float half(const std::uint8_t h[2]) { return half_at(h); }

void set_half(std::uint8_t h[2], std::uint16_t v) { std::memcpy(h, &v, 2); }

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

void quantize_q8_0(const float* x, std::size_t n, void* out) {
  auto* y = static_cast<BlockQ8_0*>(out);
  for (std::size_t b = 0; b < n / 32; ++b, x += 32) {
    BlockQ8_0& o = y[b];
    float amax = 0.0f;
    bool finite = true;
    for (int j = 0; j < 32; ++j) {
      const float ax = std::fabs(x[j]);
      finite = finite && ax <= std::numeric_limits<float>::max();
      amax = std::max(amax, ax);
    }
    std::memset(o.qs, 0, sizeof o.qs);
    if (!finite) {
      set_half(o.d, 0x7E00);  // NaN
      continue;
    }
    set_half(o.d, f32_to_f16(amax / 127.0f));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 32; ++j) o.qs[j] = static_cast<std::int8_t>(std::clamp(nearest(x[j] * id), -128, 127));
  }
}

float dot_q4_k_q8_k(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ4K*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    std::int32_t isum = 0, imin = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      scale_min_k4(j, w[b].scales, sc, mn);
      const std::uint8_t* q = w[b].qs + 32 * (j / 2);
      const std::int8_t* x = a[b].qs + 32 * j;
      std::int32_t dot = 0;
      for (int i = 0; i < 32; ++i) dot += (j % 2 ? q[i] >> 4 : q[i] & 0x0F) * x[i];
      isum += sc * dot;
      imin += mn * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
    }
    const float d = a[b].d * half(w[b].d), dmin = a[b].d * half(w[b].dmin);
    s += d * static_cast<float>(isum);
    s -= dmin * static_cast<float>(imin);
  }
  return s;
}

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
    s += (a[b].d * half(w[b].d)) * static_cast<float>(isum);
  }
  return s;
}

float dot_q8_0_q8_0(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ8_0*>(wv);
  const auto* a = static_cast<const BlockQ8_0*>(av);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) {
    std::int32_t isum = 0;
    for (int i = 0; i < 32; ++i) isum += w[b].qs[i] * a[b].qs[i];
    s += (half(w[b].d) * half(a[b].d)) * static_cast<float>(isum);
  }
  return s;
}

const quant::ActProduct* int_product(std::uint32_t type, Isa isa) {
  static const quant::ActProduct q4k{256, sizeof(BlockQ8K), quantize_q8_k, dot_q4_k_q8_k},
      q6k{256, sizeof(BlockQ8K), quantize_q8_k, dot_q6_k_q8_k}, q80{32, sizeof(BlockQ8_0), quantize_q8_0, dot_q8_0_q8_0};
  const quant::ActProduct* scalar = type == q4_k ? &q4k : type == q6_k ? &q6k : type == q8_0 ? &q80 : nullptr;
  if (!scalar || isa == Isa::scalar) return scalar;
  // The same with the AVX2 dot, made once, the first time a CPU with AVX2 asks.
  static const quant::ActProduct simd[3] = {{q4k.act_block, q4k.act_bytes, q4k.quantize, int_dot_avx2(q4_k)},
                                            {q6k.act_block, q6k.act_bytes, q6k.quantize, int_dot_avx2(q6_k)},
                                            {q80.act_block, q80.act_bytes, q80.quantize, int_dot_avx2(q8_0)}};
  return &simd[scalar == &q4k ? 0 : scalar == &q6k ? 1 : 2];
}

}  // namespace lowp::accuracy::ggml
