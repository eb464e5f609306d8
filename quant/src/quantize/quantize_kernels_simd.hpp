// Internal: the quantize kernels written once over an xsimd architecture A (instantiated in
// quantize_kernels_avx2.cpp and quantize_kernels_avx512.cpp). Tails fall back to scalar code
// that performs the same operations.
#pragma once
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>

#include "quantize_kernels.hpp"

namespace lowp::quant::detail {

template <class A, class Hmax>
struct QuantSimd {
  using F = xsimd::batch<float, A>;
  using I = xsimd::batch<std::int32_t, A>;
  static constexpr std::size_t W = F::size;
  static constexpr std::int32_t kAbs = 0x7fffffff, kInf = 0x7f800000;

  static std::uint32_t bits(const float* p) noexcept {
    std::uint32_t b;
    std::memcpy(&b, p, 4);
    return b & 0x7fffffffu;
  }
  static I load_abs(const float* p) noexcept { return xsimd::bitwise_cast<I>(F::load_unaligned(p)) & I(kAbs); }
  // |x| bit patterns are non-negative int32s, ordered like the magnitudes: signed max works.
  static I finite(I b) noexcept { return xsimd::select(b < I(kInf), b, I(0)); }

  static std::uint32_t group_max(const float* x, std::size_t n, std::size_t cw, std::uint32_t* out) {
    I raw_v(0);
    std::uint32_t raw = 0;
    std::size_t g = 0;
    for (std::size_t c0 = 0; c0 < n; c0 += cw, ++g) {
      const std::size_t len = std::min(cw, n - c0);
      const float* p = x + c0;
      std::size_t k = 0;
      std::uint32_t fin = 0;
      if (len >= W) {
        I fin_v(0);
        for (; k + W <= len; k += W) {
          const I b = load_abs(p + k);
          raw_v = xsimd::max(raw_v, b);
          fin_v = xsimd::max(fin_v, finite(b));
        }
        fin = static_cast<std::uint32_t>(Hmax::hmax(fin_v));
      }
      for (; k < len; ++k) {
        const std::uint32_t b = bits(p + k);
        raw = std::max(raw, b);
        if (b < 0x7f800000u) fin = std::max(fin, b);
      }
      out[g] = fin;
    }
    return std::max(raw, static_cast<std::uint32_t>(Hmax::hmax(raw_v)));
  }

  static std::uint32_t max_into(const float* x, std::size_t n, std::uint32_t* acc) {
    I raw_v(0);
    std::uint32_t raw = 0;
    std::size_t k = 0;
    auto* a = reinterpret_cast<std::int32_t*>(acc);  // values below 2^31: same order signed
    for (; k + W <= n; k += W) {
      const I b = load_abs(x + k);
      raw_v = xsimd::max(raw_v, b);
      xsimd::max(I::load_unaligned(a + k), finite(b)).store_unaligned(a + k);
    }
    for (; k < n; ++k) {
      const std::uint32_t b = bits(x + k);
      raw = std::max(raw, b);
      if (b < 0x7f800000u) acc[k] = std::max(acc[k], b);
    }
    return std::max(raw, static_cast<std::uint32_t>(Hmax::hmax(raw_v)));
  }

  static void seg(const float* s, float* d, std::size_t n, float v, bool mul) {
    const F vv(v);
    std::size_t k = 0;
    if (mul) {
      for (; k + W <= n; k += W) (F::load_unaligned(s + k) * vv).store_unaligned(d + k);
      for (; k < n; ++k) d[k] = s[k] * v;
    } else {
      for (; k + W <= n; k += W) (F::load_unaligned(s + k) / vv).store_unaligned(d + k);
      for (; k < n; ++k) d[k] = s[k] / v;
    }
  }

  static void scale_groups(const float* s, float* d, std::size_t n, std::size_t lead, std::size_t cw, const float* v,
                           bool mul) {
    std::size_t k = 0, len = std::min(lead, n);
    if (lead == cw && cw % W == 0) {  // whole groups of whole vectors (MX's 32, NVFP4's 16 on AVX-512)
      const std::size_t groups = n / cw;
      for (std::size_t g = 0; g < groups; ++g, k += cw) {
        const F vv(v[g]);
        for (std::size_t j = k; j < k + cw; j += W)
          (mul ? F::load_unaligned(s + j) * vv : F::load_unaligned(s + j) / vv).store_unaligned(d + j);
      }
      if (k == n) return;
      seg(s + k, d + k, n - k, v[groups], mul);
      return;
    }
    for (std::size_t g = 0; k < n; ++g) {
      seg(s + k, d + k, len, v[g], mul);
      k += len;
      len = std::min(cw, n - k);
    }
  }

  static void scale_each(const float* s, float* d, std::size_t n, const float* v, bool mul) {
    std::size_t k = 0;
    if (mul) {
      for (; k + W <= n; k += W) (F::load_unaligned(s + k) * F::load_unaligned(v + k)).store_unaligned(d + k);
      for (; k < n; ++k) d[k] = s[k] * v[k];
    } else {
      for (; k + W <= n; k += W) (F::load_unaligned(s + k) / F::load_unaligned(v + k)).store_unaligned(d + k);
      for (; k < n; ++k) d[k] = s[k] / v[k];
    }
  }

  static void round_int(float* x, std::size_t n, float lo, float hi, std::size_t* nan, std::size_t* inf) {
    const F vlo(lo), vhi(hi), zero(0.0f), vinf(std::numeric_limits<float>::infinity());
    std::size_t k = 0, a = 0, b = 0;
    for (; k + W <= n; k += W) {
      const F v = F::load_unaligned(x + k);
      const auto bad = xsimd::isnan(v);
      if (xsimd::any(bad | (xsimd::abs(v) == vinf)))
        for (std::size_t i = k; i < k + W; ++i) {
          a += std::isnan(x[i]);
          b += std::isinf(x[i]);
        }
      xsimd::select(bad, zero, xsimd::min(vhi, xsimd::max(vlo, xsimd::nearbyint(v))) + zero).store_unaligned(x + k);
    }
    for (; k < n; ++k) {
      const float v = x[k];
      a += std::isnan(v);
      b += std::isinf(v);
      x[k] = std::isnan(v) ? 0.0f : std::min(hi, std::max(lo, std::nearbyint(v))) + 0.0f;
    }
    *nan += a;
    *inf += b;
  }

  static constexpr QuantKernels table() { return {group_max, max_into, scale_groups, scale_each, round_int}; }
};

}  // namespace lowp::quant::detail
