// ggml's grid-coded types (dequantize_row_iq2_xxs ... iq1_m in ggml-quants.c): groups of 8 (or
// 4) weights are an index into a codebook of grid points (iq_grids.inc), with sign bits and
// per-32 scales. Products in ggml's order; compiled with -ffp-contract=off like dequantize.cpp.
#include "io/ggml/iq_decoders.hpp"

#include <cstring>

#include "lowp/numerics/half.hpp"

namespace lowp::accuracy::ggml::detail {

namespace {

#include "io/ggml/iq_grids.inc"

float half_at(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

std::uint16_t u16_at(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

std::uint32_t u32_at(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Byte j of a grid entry (little-endian, as ggml reads it through a byte pointer).
int grid_byte(std::uint64_t entry, int j) { return static_cast<int>((entry >> (8 * j)) & 0xFF); }

// Seven sign bits and an eighth that makes their count even (ggml's ksigns_iq2xs).
std::uint8_t signs7(std::uint32_t bits) {
  const std::uint32_t s = bits & 127;
  return static_cast<std::uint8_t>(s | (static_cast<std::uint32_t>(__builtin_popcount(s) & 1) << 7));
}

float sign(std::uint8_t signs, int j) { return signs & (1u << j) ? -1.f : 1.f; }

// Eight weights db * grid * sign.
void put8(float* y, float db, std::uint64_t entry, std::uint8_t signs) {
  for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid_byte(entry, j)) * sign(signs, j);
}

}  // namespace

// IQ2_XXS: f16 d, then per 32 weights two uint32: four 8-bit grid indices, and four 7-bit
// sign groups with a 4-bit scale in the top bits.
void decode_iq2_xxs(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int ib = 0; ib < 8; ++ib) {
    const std::uint8_t* q = b + 2 + 8 * ib;
    const std::uint32_t signs = u32_at(q + 4);
    const float db = d * (0.5f + static_cast<float>(signs >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l, y += 8) put8(y, db, kIq2xxsGrid[q[l]], signs7(signs >> (7 * l)));
  }
}

// IQ2_XS: f16 d, 32 uint16 (9-bit grid index, 7 sign bits), 8 bytes of two 4-bit scales.
void decode_iq2_xs(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* scales = b + 66;
  for (int ib = 0; ib < 8; ++ib) {
    const float db[2] = {d * (0.5f + static_cast<float>(scales[ib] & 0x0F)) * 0.25f,
                         d * (0.5f + static_cast<float>(scales[ib] >> 4)) * 0.25f};
    for (int l = 0; l < 4; ++l, y += 8) {
      const std::uint16_t q = u16_at(b + 2 + 2 * (4 * ib + l));
      put8(y, db[l / 2], kIq2xsGrid[q & 511], signs7(q >> 9));
    }
  }
}

// IQ2_S: f16 d, 32 low index bytes, 32 sign bytes, 8 bytes of high index bits, 8 scale bytes.
void decode_iq2_s(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* qs = b + 2;
  const std::uint8_t* signs = b + 34;
  const std::uint8_t* qh = b + 66;
  const std::uint8_t* scales = b + 74;
  for (int ib = 0; ib < 8; ++ib) {
    const float db[2] = {d * (0.5f + static_cast<float>(scales[ib] & 0x0F)) * 0.25f,
                         d * (0.5f + static_cast<float>(scales[ib] >> 4)) * 0.25f};
    for (int l = 0; l < 4; ++l, y += 8) {
      const int index = qs[4 * ib + l] | ((qh[ib] << (8 - 2 * l)) & 0x300);
      put8(y, db[l / 2], kIq2sGrid[index], signs[4 * ib + l]);
    }
  }
}

// IQ3_XXS: f16 d, 64 bytes of grid indices (4 weights each), then per 32 weights a uint32 of
// four 7-bit sign groups and a 4-bit scale.
void decode_iq3_xxs(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* qs = b + 2;
  for (int ib = 0; ib < 8; ++ib, qs += 8) {
    const std::uint32_t aux = u32_at(b + 2 + 64 + 4 * ib);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l, y += 8) {
      const std::uint8_t s = signs7(aux >> (7 * l));
      const std::uint32_t g1 = kIq3xxsGrid[qs[2 * l]], g2 = kIq3xxsGrid[qs[2 * l + 1]];
      for (int j = 0; j < 4; ++j) {
        y[j] = db * static_cast<float>(grid_byte(g1, j)) * sign(s, j);
        y[j + 4] = db * static_cast<float>(grid_byte(g2, j)) * sign(s, j + 4);
      }
    }
  }
}

// IQ3_S: f16 d, 64 low index bytes, 8 bytes of ninth index bits, 32 sign bytes, 4 bytes of
// two 4-bit odd scales (1 + 2s) per 64 weights.
void decode_iq3_s(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* qs = b + 2;
  const std::uint8_t* qh = b + 66;
  const std::uint8_t* signs = b + 74;
  const std::uint8_t* scales = b + 106;
  for (int ib = 0; ib < 8; ib += 2) {
    const float db[2] = {d * static_cast<float>(1 + 2 * (scales[ib / 2] & 0x0F)),
                         d * static_cast<float>(1 + 2 * (scales[ib / 2] >> 4))};
    for (int half = 0; half < 2; ++half, qs += 8, signs += 4, ++qh)
      for (int l = 0; l < 4; ++l, y += 8) {
        const std::uint32_t g1 = kIq3sGrid[qs[2 * l] | ((qh[0] << (8 - 2 * l)) & 256)];
        const std::uint32_t g2 = kIq3sGrid[qs[2 * l + 1] | ((qh[0] << (7 - 2 * l)) & 256)];
        for (int j = 0; j < 4; ++j) {
          y[j] = db[half] * static_cast<float>(grid_byte(g1, j)) * sign(signs[l], j);
          y[j + 4] = db[half] * static_cast<float>(grid_byte(g2, j)) * sign(signs[l], j + 4);
        }
      }
  }
}

constexpr float kIq1Delta = 0.125f;

// IQ1_S: f16 d, 32 low index bytes, 8 uint16 (four 3-bit high index parts, a 3-bit odd scale,
// the delta's sign); grid values in {-1, 0, 1}, x = d (2s + 1) (g +- 1/8).
void decode_iq1_s(const std::uint8_t* b, float* y) {
  const float d = half_at(b);
  const std::uint8_t* qs = b + 2;
  for (int ib = 0; ib < 8; ++ib, qs += 4) {
    const std::uint16_t qh = u16_at(b + 34 + 2 * ib);
    const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
    const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
    for (int l = 0; l < 4; ++l, y += 8) {
      const std::uint64_t g = kIq1sGrid[qs[l] | (((qh >> (3 * l)) & 7) << 8)];
      for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(static_cast<std::int8_t>(grid_byte(g, j))) + delta);
    }
  }
}

// IQ1_M: 32 low index bytes, 16 bytes of (3-bit high index, delta sign) nibbles, 8 scale bytes
// holding 3-bit scales and, in the top nibble of each uint16, the f16 super-scale.
void decode_iq1_m(const std::uint8_t* b, float* y) {
  const std::uint8_t* qs = b;
  const std::uint8_t* qh = b + 32;
  std::uint16_t sc[4];
  std::memcpy(sc, b + 48, 8);
  const std::uint16_t dbits = static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                                         ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
  const float d = f16_to_f32(dbits);
  for (int ib = 0; ib < 8; ++ib, qs += 4, qh += 2) {
    const float dl[2] = {d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2))) & 7) + 1),
                         d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1)};
    const int idx[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                        qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
    const float delta[4] = {qh[0] & 0x08 ? -kIq1Delta : kIq1Delta, qh[0] & 0x80 ? -kIq1Delta : kIq1Delta,
                            qh[1] & 0x08 ? -kIq1Delta : kIq1Delta, qh[1] & 0x80 ? -kIq1Delta : kIq1Delta};
    for (int l = 0; l < 4; ++l, y += 8) {
      const std::uint64_t g = kIq1sGrid[idx[l]];
      for (int j = 0; j < 8; ++j)
        y[j] = dl[l / 2] * (static_cast<float>(static_cast<std::int8_t>(grid_byte(g, j))) + delta[l]);
    }
  }
}

}  // namespace lowp::accuracy::ggml::detail
