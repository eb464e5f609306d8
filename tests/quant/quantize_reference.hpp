// An independent reference for quantize: each element's group found from the granularity's
// definition, the group's amax by a plain loop, the scale from the rule's published formula
// (OCP MX, torchao's amax and NVFP4 arithmetic) and the code from the scalar codec.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::quant::test_ref {

struct Bounds {
  std::size_t r0, r1, c0, c1;
};

inline Bounds group_bounds(const QuantSpec& s, std::size_t rows, std::size_t cols, std::size_t r, std::size_t c) {
  const std::size_t b = s.block;
  switch (s.granularity) {
    case Granularity::tensor: return {0, rows, 0, cols};
    case Granularity::row: return {r, r + 1, 0, cols};
    case Granularity::column: return {0, rows, c, c + 1};
    case Granularity::block: return {r, r + 1, c / b * b, std::min(cols, c / b * b + b)};
    case Granularity::tile: return {r / b * b, std::min(rows, r / b * b + b), c / b * b, std::min(cols, c / b * b + b)};
  }
  return {0, 0, 0, 0};
}

inline float amax_of(const float* x, std::size_t cols, const Bounds& g) {
  float m = 0;
  for (std::size_t r = g.r0; r < g.r1; ++r)
    for (std::size_t c = g.c0; c < g.c1; ++c)
      if (std::isfinite(x[r * cols + c])) m = std::max(m, std::fabs(x[r * cols + c]));
  return m;
}

// The code of element i in packed storage (the layout documented in lowp/formats/bulk.hpp).
inline std::uint32_t unpack(const Format& f, const std::vector<std::uint8_t>& b, std::size_t i) {
  const int bits = f.bits();
  if (bits <= 4) return (b[i / 2] >> (4 * (i % 2))) & 0xfu;
  if (bits <= 6) {
    const std::size_t g = i / 4 * 3;
    const std::uint32_t w = b[g] | static_cast<std::uint32_t>(b[g + 1]) << 8 | static_cast<std::uint32_t>(b[g + 2]) << 16;
    return (w >> (6 * (i % 4))) & 0x3fu;
  }
  if (bits <= 8) return b[i];
  return static_cast<std::uint32_t>(b[2 * i] | b[2 * i + 1] << 8);  // 16-bit, little-endian host
}

// emax_elem of the OCP MX element formats (spec table), and of int8 (max 127 = 1.98 * 2^6).
inline int emax_elem(const Format& f) {
  if (f == parse_format("e4m3")) return 8;
  if (f == parse_format("e5m2")) return 15;
  if (f == parse_format("e3m2")) return 4;
  if (f == parse_format("e2m3") || f == parse_format("e2m1")) return 2;
  if (f == parse_format("int8")) return 6;
  return 1000;  // not used
}

struct Expected {
  std::uint32_t code = 0;
  float value = 0;   // dequantized
  float scale = 1;   // the group's dequantization scale (QuantizedTensor::scales)
};

// The amax of the group of every element (each group's scanned once), and of the tensor.
struct Amaxes {
  std::vector<float> of_element;
  float tensor = 0;
};
inline Amaxes amaxes(const QuantSpec& s, const float* x, std::size_t rows, std::size_t cols) {
  Amaxes a;
  a.of_element.assign(rows * cols, -1.0f);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      if (a.of_element[r * cols + c] >= 0) continue;
      const Bounds g = group_bounds(s, rows, cols, r, c);
      const float m = amax_of(x, cols, g);
      for (std::size_t i = g.r0; i < g.r1; ++i)
        for (std::size_t k = g.c0; k < g.c1; ++k) a.of_element[i * cols + k] = m;
    }
  a.tensor = amax_of(x, cols, {0, rows, 0, cols});
  return a;
}

// What quantize must give for element (r, c) of the row-major rows x cols tensor x.
inline Expected expected(const QuantSpec& s, const float* x, const Amaxes& am, std::size_t cols, std::size_t r,
                         std::size_t c) {
  const Format& f = s.format;
  const float fmax = static_cast<float>(f.max_finite());
  const std::size_t i = r * cols + c;
  CastOptions o = s.cast;
  if (s.rule != ScaleRule::none) o.saturate = true;
  const std::uint32_t rand = o.round == Round::stochastic ? random_bits(rng_key(s.seed), i) : 0u;
  const float amax = am.of_element[i];
  Expected e;
  switch (s.rule) {
    case ScaleRule::none:
      e.code = encode(f, x[i], o, rand);
      e.value = static_cast<float>(decode(f, e.code));
      return e;
    case ScaleRule::amax:
    case ScaleRule::absmax_int:
    case ScaleRule::amax_pow2: {
      float q = amax > 0 ? fmax / amax : 1.0f;
      if (s.rule == ScaleRule::amax_pow2) {
        double p = 1;
        while (p > q) p /= 2;
        while (2 * p <= q) p *= 2;
        q = static_cast<float>(p);
      }
      e.code = encode(f, x[i] * q, o, rand);
      e.value = static_cast<float>(decode(f, e.code)) / q;
      e.scale = 1.0f / q;
      return e;
    }
    case ScaleRule::mx:
    case ScaleRule::mx_ceil:
    case ScaleRule::mx_even:
    case ScaleRule::mx_rceil: {
      // torchao's ScaleCalculationMode definitions, in double.
      int k = -127;
      if (amax > 0) {
        int ex = 0;
        const double m = 2 * std::frexp(static_cast<double>(amax), &ex);  // amax = m * 2^(ex-1)
        if (s.rule == ScaleRule::mx) {
          k = ex - 1 - emax_elem(f);
        } else if (s.rule == ScaleRule::mx_ceil) {
          k = (m == 1 ? ex - 1 : ex) - emax_elem(f);
        } else if (s.rule == ScaleRule::mx_even) {
          k = (m >= 2 - std::ldexp(1.0, -(f.man_bits + 1)) ? ex : ex - 1) - emax_elem(f);
        } else {
          const double d = static_cast<float>(static_cast<double>(amax) * static_cast<float>(1.0 / fmax));
          k = -127;
          while (k < 127 && std::ldexp(1.0, k) < d) ++k;
        }
        k = std::clamp(k, -127, 127);
      }
      const double X = std::ldexp(1.0, k);
      e.code = encode(f, static_cast<double>(x[i]) / X, o, rand);
      e.value = static_cast<float>(decode(f, e.code) * X);
      e.scale = static_cast<float>(X);
      return e;
    }
    case ScaleRule::nvfp4: {
      const float tensor_amax = am.tensor;
      const float ts = tensor_amax > 0 ? tensor_amax / (448.0f * fmax) : 1.0f;
      const float b = std::clamp(amax / fmax / ts, 0.015625f, 448.0f);
      const Format ue4m3 = parse_format("ue4m3");
      const float bs = static_cast<float>(decode(ue4m3, encode(ue4m3, b)));
      const float total = ts * bs;
      e.code = encode(f, x[i] / total, o, rand);
      e.value = static_cast<float>(decode(f, e.code)) * total;
      e.scale = bs;
      return e;
    }
    case ScaleRule::mse: break;  // checked through mse_clip_search in test_scale_rules
    default: break;              // the stacks' rules and 4over6: test_scale_rules_stacks.cpp
  }
  return e;
}

}  // namespace lowp::quant::test_ref
