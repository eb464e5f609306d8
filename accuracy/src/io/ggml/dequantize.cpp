// ggml's block formats widened to float32 with ggml's own arithmetic (ggml-quants.c
// dequantize_row_*): the same products in the same order, so every value is bit-identical.
// This file is compiled with -ffp-contract=off: a fused multiply-add in `d * q - m` would
// round once instead of twice and break that.
#include <array>
#include <cmath>
#include <cstring>

#include "io/ggml/dequantize_simd.hpp"
#include "io/ggml/ggml_types.hpp"
#include "io/ggml/iq_decoders.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp::accuracy::ggml {

namespace {

constexpr std::size_t QK_K = 256;

// FP4 E2M1 values doubled (kvalues_mxfp4); the E8M0 scale is halved to match.
constexpr std::array<std::int8_t, 16> kMxfp4 = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e-127) / 2, subnormal for e < 2 (ggml_e8m0_to_fp32_half).
float e8m0_half(std::uint8_t e) {
  const std::uint32_t bits = e < 2 ? std::uint32_t{0x00200000} << e : static_cast<std::uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// --- 32-element blocks -------------------------------------------------------------------

// Q4_0: f16 d, 16 bytes of nibbles; low nibbles are elements 0..15, high ones 16..31.
void decode_q4_0(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// Q4_1: f16 d, f16 m, nibbles; x = q d + m.
void decode_q4_1(const std::uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  const std::uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// Q5_0 / Q5_1: nibbles plus a 32-bit word of fifth bits (bit j for element j).
void decode_q5(const std::uint8_t* b, float* y, bool with_min) {
  const float d = half_at(b), m = with_min ? half_at(b + 2) : 0.0f;
  const std::uint8_t* p = b + (with_min ? 4 : 2);
  std::uint32_t qh;
  std::memcpy(&qh, p, 4);
  const std::uint8_t* qs = p + 4;
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
    const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    const int x0 = (qs[j] & 0x0F) | h0, x1 = (qs[j] >> 4) | h1;
    if (with_min) {
      y[j] = static_cast<float>(x0) * d + m;
      y[j + 16] = static_cast<float>(x1) * d + m;
    } else {
      y[j] = static_cast<float>(x0 - 16) * d;
      y[j + 16] = static_cast<float>(x1 - 16) * d;
    }
  }
}

// Q8_0: f16 d, 32 int8. Q8_1 has a second f16 (d times the sum) that decoding ignores.
void decode_q8(const std::uint8_t* b, float* y, std::size_t header) {
  const float d = half_at(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<std::int8_t>(b[header + j])) * d;
}

void decode_iq4_nl(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4nl[qs[j] & 0x0F]);
    y[j + 16] = d * static_cast<float>(kIq4nl[qs[j] >> 4]);
  }
}

// MXFP4: one E8M0 exponent byte, 16 bytes of FP4 E2M1 nibbles.
void decode_mxfp4(const std::uint8_t* b, float* y) {
  const float d = e8m0_half(b[0]);
  const std::uint8_t* qs = b + 1;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(kMxfp4[qs[j] & 0x0F]) * d;
    y[j + 16] = static_cast<float>(kMxfp4[qs[j] >> 4]) * d;
  }
}

// NVFP4 (64 weights): four UE4M3 scale bytes, one per 16, then 8 bytes of E2M1 nibbles per 16
// (low nibbles first). The scale is halved to match the doubled value table; 0x7F reads as 0.
float ue4m3_half(std::uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const int e = (x >> 3) & 0x0F, m = x & 7;
  const float raw = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
  return raw * 0.5f;
}

void decode_nvfp4(const std::uint8_t* b, float* y) {
  for (int s = 0; s < 4; ++s, y += 16) {
    const float d = ue4m3_half(b[s]);
    const std::uint8_t* qs = b + 4 + 8 * s;
    for (int j = 0; j < 8; ++j) {
      y[j] = static_cast<float>(kMxfp4[qs[j] & 0x0F]) * d;
      y[j + 8] = static_cast<float>(kMxfp4[qs[j] >> 4]) * d;
    }
  }
}

// Q1_0 (128 weights): f16 d, one bit a weight (1: +d, 0: -d).
void decode_q1_0(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 128; ++j) y[j] = (b[2 + j / 8] >> (j % 8)) & 1 ? d : -d;
}

// Q2_0 (64 weights): f16 d, 2-bit codes q for (q - 1) d, four a byte from the low bits.
void decode_q2_0(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 64; ++j) y[j] = static_cast<float>(((b[2 + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
}

// --- 256-element super-blocks (K-quants) ------------------------------------------------

// Q2_K: 16 scale bytes (4-bit scale, 4-bit min), 64 bytes of 2-bit quants, f16 d, f16 dmin.
void decode_q2_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* scales = b;
  const std::uint8_t* q = b + 16;
  const float d = half_at(b + 80), dmin = half_at(b + 82);
  int is = 0;
  for (std::size_t n = 0; n < QK_K; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const std::uint8_t sc = scales[is++];
        const float dl = d * static_cast<float>(sc & 0x0F), ml = dmin * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
      }
    }
    q += 32;
  }
}

// Q3_K: 32 bytes of high-bit masks, 64 bytes of low 2 bits, 12 bytes packing sixteen 6-bit
// scales (low 4 bits in bytes 0..7, high 2 bits in bytes 8..11), f16 d.
void decode_q3_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* hm = b;
  const std::uint8_t* q = b + 32;
  const std::uint8_t* sc = b + 96;
  const float d_all = half_at(b + 108);
  int scales[16];
  for (int i = 0; i < 16; ++i) scales[i] = scale_q3_k(sc, i);
  int is = 0;
  std::uint8_t m = 1;
  for (std::size_t n = 0; n < QK_K; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const float dl = d_all * static_cast<float>(scales[is++]);
        for (int l = 0; l < 16; ++l) {
          const int k = l + 16 * half;
          const int v = ((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4);
          *y++ = dl * static_cast<float>(v);
        }
      }
      m = static_cast<std::uint8_t>(m << 1);
    }
    q += 32;
  }
}

// Q4_K: f16 d, f16 dmin, 12 scale bytes, 128 bytes of nibbles; Q5_K adds 32 bytes of fifth bits.
void decode_q45_k(const std::uint8_t* b, float* y, bool five) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const std::uint8_t* scales = b + 4;
  const std::uint8_t* qh = b + 16;
  const std::uint8_t* q = b + (five ? 48 : 16);
  std::uint8_t u1 = 1, u2 = 2;
  for (int is = 0; is < 8; is += 2) {
    int sc, mn;
    scale_min_k4(is, scales, sc, mn);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
    scale_min_k4(is + 1, scales, sc, mn);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(mn);
    for (int l = 0; l < 32; ++l) {
      const int v = (q[l] & 0x0F) + (five && (qh[l] & u1) ? 16 : 0);
      *y++ = d1 * static_cast<float>(v) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      const int v = (q[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0);
      *y++ = d2 * static_cast<float>(v) - m2;
    }
    q += 32;
    u1 = static_cast<std::uint8_t>(u1 << 2);
    u2 = static_cast<std::uint8_t>(u2 << 2);
  }
}

// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2 bits, 16 int8 scales, f16 d.
void decode_q6_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* ql = b;
  const std::uint8_t* qh = b + 128;
  const std::int8_t* sc = reinterpret_cast<const std::int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (std::size_t n = 0; n < QK_K; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

// Q8_K (ggml's activation type, float32 d, 256 int8, 16 int16 sums).
void decode_q8_k(const std::uint8_t* b, float* y) {
  float d;
  std::memcpy(&d, b, 4);
  for (std::size_t j = 0; j < QK_K; ++j) y[j] = d * static_cast<float>(static_cast<std::int8_t>(b[4 + j]));
}

// IQ4_XS: f16 d, 16 bits of scale high parts, 4 bytes of scale low nibbles, 128 bytes of
// IQ4_NL nibbles; eight sub-blocks of 32 with 6-bit scales biased by 32.
void decode_iq4_xs(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* qs = b + 8;
  for (int ib = 0; ib < 8; ++ib) {
    const float dl = d * static_cast<float>(scale_iq4_xs(b + 2, b + 4, ib));
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * static_cast<float>(kIq4nl[qs[j] & 0x0F]);
      y[j + 16] = dl * static_cast<float>(kIq4nl[qs[j] >> 4]);
    }
    y += 32;
    qs += 16;
  }
}

// A base-3 digit: byte q holds trits as a fixed-point fraction; multiplying by 3^n brings
// digit n to the top (ggml's (q * 3^n mod 256) * 3 >> 8).
float trit(std::uint8_t byte, int n, float d) {
  static constexpr std::uint8_t pow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<std::uint8_t>(byte * pow3[n]);
  const int xi = (static_cast<std::uint16_t>(q) * 3) >> 8;
  return static_cast<float>(xi - 1) * d;
}

// TQ1_0: 48 bytes of 5 trits, 4 bytes of 4 trits, f16 d.
void decode_tq1_0(const std::uint8_t* b, float* y) {
  const std::uint8_t* qs = b;
  const std::uint8_t* qh = b + 48;
  const float d = half_at(b + 52);
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m) *y++ = trit(qs[m], n, d);
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m) *y++ = trit(qs[32 + m], n, d);
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) *y++ = trit(qh[j], n, d);
}

// TQ2_0: 64 bytes of 2-bit codes {0, 1, 2} for {-1, 0, 1}, f16 d.
void decode_tq2_0(const std::uint8_t* b, float* y) {
  const float d = half_at(b + 64);
  for (int j = 0; j < 64; j += 32)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m) *y++ = static_cast<float>(((b[j + m] >> (2 * l)) & 3) - 1) * d;
}

struct Traits {
  const char* name = nullptr;
  std::size_t block = 0, bytes = 0;
  void (*decode)(const std::uint8_t*, float*) = nullptr;
};

constexpr std::size_t kTypes = 43;

const std::array<Traits, kTypes>& traits() {
  static const std::array<Traits, kTypes> t = [] {
    std::array<Traits, kTypes> a{};
    a[f32] = {"F32", 1, 4, [](const std::uint8_t* b, float* y) { std::memcpy(y, b, 4); }};
    a[f16] = {"F16", 1, 2, [](const std::uint8_t* b, float* y) { *y = half_at(b); }};
    a[bf16] = {"BF16", 1, 2, [](const std::uint8_t* b, float* y) {
                 std::uint16_t h;
                 std::memcpy(&h, b, 2);
                 *y = bf16_to_f32(h);
               }};
    a[q4_0] = {"Q4_0", 32, 18, decode_q4_0};
    a[q4_1] = {"Q4_1", 32, 20, decode_q4_1};
    a[q5_0] = {"Q5_0", 32, 22, [](const std::uint8_t* b, float* y) { decode_q5(b, y, false); }};
    a[q5_1] = {"Q5_1", 32, 24, [](const std::uint8_t* b, float* y) { decode_q5(b, y, true); }};
    a[q8_0] = {"Q8_0", 32, 34, [](const std::uint8_t* b, float* y) { decode_q8(b, y, 2); }};
    a[q8_1] = {"Q8_1", 32, 36, [](const std::uint8_t* b, float* y) { decode_q8(b, y, 4); }};
    a[q2_k] = {"Q2_K", QK_K, 84, decode_q2_k};
    a[q3_k] = {"Q3_K", QK_K, 110, decode_q3_k};
    a[q4_k] = {"Q4_K", QK_K, 144, [](const std::uint8_t* b, float* y) { decode_q45_k(b, y, false); }};
    a[q5_k] = {"Q5_K", QK_K, 176, [](const std::uint8_t* b, float* y) { decode_q45_k(b, y, true); }};
    a[q6_k] = {"Q6_K", QK_K, 210, decode_q6_k};
    a[q8_k] = {"Q8_K", QK_K, 292, decode_q8_k};
    a[iq2_xxs] = {"IQ2_XXS", QK_K, 66, detail::decode_iq2_xxs};
    a[iq2_xs] = {"IQ2_XS", QK_K, 74, detail::decode_iq2_xs};
    a[iq3_xxs] = {"IQ3_XXS", QK_K, 98, detail::decode_iq3_xxs};
    a[iq1_s] = {"IQ1_S", QK_K, 50, detail::decode_iq1_s};
    a[iq4_nl] = {"IQ4_NL", 32, 18, decode_iq4_nl};
    a[iq3_s] = {"IQ3_S", QK_K, 110, detail::decode_iq3_s};
    a[iq2_s] = {"IQ2_S", QK_K, 82, detail::decode_iq2_s};
    a[iq4_xs] = {"IQ4_XS", QK_K, 136, decode_iq4_xs};
    // Integer and float64 tensors are not weights: storage known, not decoded.
    a[i8] = {"I8", 1, 1, nullptr};
    a[i16] = {"I16", 1, 2, nullptr};
    a[i32] = {"I32", 1, 4, nullptr};
    a[i64] = {"I64", 1, 8, nullptr};
    a[f64] = {"F64", 1, 8, nullptr};
    a[iq1_m] = {"IQ1_M", QK_K, 56, detail::decode_iq1_m};
    a[tq1_0] = {"TQ1_0", QK_K, 54, decode_tq1_0};
    a[tq2_0] = {"TQ2_0", QK_K, 66, decode_tq2_0};
    a[mxfp4] = {"MXFP4", 32, 17, decode_mxfp4};
    a[nvfp4] = {"NVFP4", 64, 36, decode_nvfp4};
    a[q1_0] = {"Q1_0", 128, 18, decode_q1_0};
    a[q2_0] = {"Q2_0", 64, 18, decode_q2_0};
    // Numbers of types ggml has removed: named for messages, no storage.
    a[4] = {"Q4_2"};
    a[5] = {"Q4_3"};
    a[31] = {"Q4_0_4_4"};
    a[32] = {"Q4_0_4_8"};
    a[33] = {"Q4_0_8_8"};
    a[36] = {"IQ4_NL_4_4"};
    a[37] = {"IQ4_NL_4_8"};
    a[38] = {"IQ4_NL_8_8"};
    return a;
  }();
  return t;
}

const Traits* find(std::uint32_t type) { return type < kTypes ? &traits()[type] : nullptr; }

const Traits& known_traits(std::uint32_t type) {
  const Traits* t = find(type);
  if (!t || t->block == 0) throw Error("ggml type " + type_name(type) + " has no storage layout lowp knows");
  return *t;
}

}  // namespace

std::string type_name(std::uint32_t type) {
  const Traits* t = find(type);
  return std::string(t && t->name ? t->name : "unknown") + " (" + std::to_string(type) + ")";
}

bool known(std::uint32_t type) {
  const Traits* t = find(type);
  return t && t->block != 0;
}

bool can_dequantize(std::uint32_t type) {
  const Traits* t = find(type);
  return t && t->decode;
}

std::size_t block_size(std::uint32_t type) { return known_traits(type).block; }
std::size_t block_bytes(std::uint32_t type) { return known_traits(type).bytes; }

std::uint64_t bytes_for(std::uint32_t type, std::uint64_t n) {
  const Traits& t = known_traits(type);
  if (n % t.block != 0)
    throw Error(std::to_string(n) + " elements of " + type_name(type) + " are not whole blocks of " +
                std::to_string(t.block));
  const std::uint64_t blocks = n / t.block;
  if (blocks > UINT64_MAX / t.bytes) throw Error(std::to_string(n) + " elements of " + type_name(type) + " overflow 64 bits");
  return blocks * t.bytes;
}

void dequantize(std::uint32_t type, const void* blocks, float* out, std::size_t n) {
  dequantize(type, blocks, out, n, best_isa());
}

void dequantize(std::uint32_t type, const void* blocks, float* out, std::size_t n, Isa isa) {
  const Traits* t = find(type);
  if (!t || !t->decode) throw Error("lowp cannot decode ggml type " + type_name(type));
  if (n % t->block != 0)
    throw Error(std::to_string(n) + " elements of " + type_name(type) + " are not whole blocks of " +
                std::to_string(t->block));
  const auto* b = static_cast<const std::uint8_t*>(blocks);
  if (type == f32) {  // the common plain case without a per-element call
    std::memcpy(out, b, 4 * n);
    return;
  }
  BlockDecoder decode = t->decode;
  if (isa != Isa::scalar)
    if (const BlockDecoder simd = block_decoder_avx2(type)) decode = simd;
  for (std::size_t i = 0; i < n / t->block; ++i) decode(b + i * t->bytes, out + i * t->block);
}

LaneDecoder lane_decoder(std::uint32_t type, Isa isa) {
  return isa == Isa::scalar ? nullptr : lane_decoder_avx2(type);
}

LaneDot lane_dot(std::uint32_t type, Isa isa) {
  switch (isa) {
    case Isa::avx512: return lane_dot_avx512(type);
    case Isa::avx2: return lane_dot_avx2(type);
    case Isa::scalar: break;
  }
  return nullptr;
}

InterleavedDot lane_dot_interleaved(std::uint32_t type, Isa isa) {
  switch (isa) {
    case Isa::avx512: return lane_dot_interleaved_avx512(type);
    case Isa::avx2: return {lane_dot_interleaved_avx2(type), 1};
    case Isa::scalar: break;
  }
  return {};
}

}  // namespace lowp::accuracy::ggml
