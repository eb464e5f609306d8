// The scalar quantize kernels (the reference) and the run-time choice between ISAs.
#include "quantize_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace lowp::quant::detail {
namespace {

std::uint32_t abs_bits(const float* p) noexcept {
  std::uint32_t b;
  std::memcpy(&b, p, 4);
  return b & 0x7fffffffu;
}

std::uint32_t group_max(const float* x, std::size_t n, std::size_t cw, std::uint32_t* out) {
  std::uint32_t raw = 0;
  std::size_t g = 0;
  for (std::size_t c0 = 0; c0 < n; c0 += cw, ++g) {
    std::uint32_t fin = 0;
    for (std::size_t k = c0; k < std::min(n, c0 + cw); ++k) {
      const std::uint32_t b = abs_bits(x + k);
      raw = std::max(raw, b);
      if (b < 0x7f800000u) fin = std::max(fin, b);
    }
    out[g] = fin;
  }
  return raw;
}

std::uint32_t max_into(const float* x, std::size_t n, std::uint32_t* acc) {
  std::uint32_t raw = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint32_t b = abs_bits(x + k);
    raw = std::max(raw, b);
    if (b < 0x7f800000u) acc[k] = std::max(acc[k], b);
  }
  return raw;
}

void scale_groups(const float* s, float* d, std::size_t n, std::size_t lead, std::size_t cw, const float* v, bool mul) {
  std::size_t k = 0, len = std::min(lead, n);
  for (std::size_t g = 0; k < n; ++g) {
    for (std::size_t i = k; i < k + len; ++i) d[i] = mul ? s[i] * v[g] : s[i] / v[g];
    k += len;
    len = std::min(cw, n - k);
  }
}

void scale_each(const float* s, float* d, std::size_t n, const float* v, bool mul) {
  for (std::size_t k = 0; k < n; ++k) d[k] = mul ? s[k] * v[k] : s[k] / v[k];
}

void round_int(float* x, std::size_t n, float lo, float hi, std::size_t* nan, std::size_t* inf) {
  std::size_t a = 0, b = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const float v = x[k];
    a += std::isnan(v);
    b += std::isinf(v);
    x[k] = std::isnan(v) ? 0.0f : std::min(hi, std::max(lo, std::nearbyint(v))) + 0.0f;
  }
  *nan += a;
  *inf += b;
}

}  // namespace

const QuantKernels kQuantKernelsScalar = {group_max, max_into, scale_groups, scale_each, round_int};

const QuantKernels& quant_kernels(Isa isa) {
  switch (isa) {
    case Isa::avx512: return kQuantKernelsAvx512;
    case Isa::avx2: return kQuantKernelsAvx2;
    case Isa::scalar: break;
  }
  return kQuantKernelsScalar;
}

const QuantKernels& quant_kernels() { return quant_kernels(best_isa()); }

}  // namespace lowp::quant::detail
