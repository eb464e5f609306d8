// The SIMD quantize kernels against the scalar reference, bit for bit, on every instruction
// set this CPU runs; and the bulk NVFP4 block-scale path against the scalar rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <limits>
#include <vector>

#include "../../quant/src/quantize/quantize_kernels.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/quant/scale_rules.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

using detail::QuantKernels;

// Random magnitudes over the whole float32 range, with NaN, Inf, zeros and subnormals.
std::vector<float> nasty(std::size_t n, std::uint64_t seed) {
  test::SplitMix rng{seed};
  std::vector<float> x(n);
  for (float& v : x) {
    const std::uint64_t r = rng.next();
    switch (r % 16) {
      case 0: v = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: v = (r & 32) ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity(); break;
      case 2: v = (r & 32) ? 0.0f : -0.0f; break;
      case 3: {
        const auto b = static_cast<std::uint32_t>(r >> 32) & 0x807fffffu;  // subnormal
        std::memcpy(&v, &b, 4);
        break;
      }
      default: {
        auto b = static_cast<std::uint32_t>(r >> 32);
        if ((b & 0x7f800000u) == 0x7f800000u) b &= 0xbfffffffu;  // keep it finite
        std::memcpy(&v, &b, 4);
      }
    }
  }
  return x;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

std::vector<Isa> simd_isas() {
  std::vector<Isa> v;
  for (const Isa i : {Isa::avx2, Isa::avx512})
    if (isa_available(i)) v.push_back(i);
  return v;
}

TEST(QuantizeKernels, SimdEqualsScalar) {
  const QuantKernels& ref = detail::quant_kernels(Isa::scalar);
  const auto isas = simd_isas();
  if (isas.empty()) GTEST_SKIP() << "no AVX2 / AVX-512 on this CPU: only the scalar kernels run here";
  for (const Isa isa : isas) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    const QuantKernels& k = detail::quant_kernels(isa);
    for (const std::size_t n : {0, 1, 7, 15, 16, 17, 31, 32, 33, 64, 100, 257, 1000}) {
      const std::vector<float> x = nasty(n, n + 1);
      // group_max over every group width, including widths below and above a register.
      for (const std::size_t cw : {1, 3, 8, 16, 17, 32, 33, 128, 4096}) {
        const std::size_t ng = n == 0 ? 0 : (n + cw - 1) / cw;
        std::vector<std::uint32_t> a(ng + 1, 7u), b(ng + 1, 7u);
        ASSERT_EQ(k.group_max(x.data(), n, cw, a.data()), ref.group_max(x.data(), n, cw, b.data())) << n << " " << cw;
        ASSERT_EQ(a, b) << n << " " << cw;
      }
      std::vector<std::uint32_t> acc_a(n), acc_b(n);
      for (std::size_t i = 0; i < n; ++i) acc_a[i] = acc_b[i] = static_cast<std::uint32_t>(i * 0x00123457u) & 0x7fffffffu;
      ASSERT_EQ(k.max_into(x.data(), n, acc_a.data()), ref.max_into(x.data(), n, acc_b.data())) << n;
      ASSERT_EQ(acc_a, acc_b) << n;
      // Scaling by group values (normal, subnormal, huge) and per element.
      const float kinds[] = {3.0f, 0.1f, 1e-40f, 1e30f, 448.0f / 3.0f, 0.0078125f, 7.0f, 1.5f, 1e-3f, 37.0f};
      std::vector<float> v(1100);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = kinds[i % 10] * static_cast<float>(i % 7 + 1);
      for (const bool mul : {true, false}) {
        for (const std::size_t cw : {16, 32, 64}) {
          for (const std::size_t lead : {cw, std::size_t{1}, cw / 2}) {
            std::vector<float> a(n), b(n);
            k.scale_groups(x.data(), a.data(), n, lead, cw, v.data(), mul);
            ref.scale_groups(x.data(), b.data(), n, lead, cw, v.data(), mul);
            ASSERT_TRUE(same_bits(a, b)) << n << " " << cw << " " << lead << " " << mul;
            std::vector<float> in_place = x;  // s and d the same array
            k.scale_groups(in_place.data(), in_place.data(), n, lead, cw, v.data(), mul);
            ASSERT_TRUE(same_bits(in_place, b));
          }
        }
        const std::vector<float> each = nasty(n, 1000 + n);
        std::vector<float> a(n), b(n);
        k.scale_each(x.data(), a.data(), n, each.data(), mul);
        ref.scale_each(x.data(), b.data(), n, each.data(), mul);
        ASSERT_TRUE(same_bits(a, b)) << n << " " << mul;
      }
    }
  }
}

TEST(QuantizeKernels, BulkNvfp4BlockScalesEqualTheScalarRule) {
  const std::vector<float> x = nasty(5000, 77);
  std::vector<float> amax(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) amax[i] = std::isfinite(x[i]) ? std::fabs(x[i]) : 0.0f;
  for (const float ts : {1.0f, 1.0f / 2688.0f, 3.7e-5f, 1e30f, 1e-45f}) {
    std::vector<std::uint8_t> codes(amax.size());
    std::vector<float> values(amax.size());
    nvfp4_block_scales(amax.data(), amax.size(), ts, 6.0f, codes.data(), values.data());
    for (std::size_t i = 0; i < amax.size(); ++i) {
      const Nvfp4BlockScale s = nvfp4_block_scale(amax[i], ts, 6.0f);
      ASSERT_EQ(codes[i], s.code) << amax[i] << " " << ts;
      ASSERT_EQ(values[i], s.value) << amax[i] << " " << ts;
    }
  }
}

TEST(QuantizeKernels, RoundIntIsTheCodecsIntegerCast) {
  // The oracle: formats' scalar codec, decode(encode(x)) to nearest even, on every ISA's kernel;
  // inputs over the whole float range (NaN, Inf, -0, subnormals) and near every tie of the range.
  std::vector<float> x = nasty(4099, 11);
  for (int i = -300; i <= 300; ++i)
    for (const float d : {0.0f, 0.5f, 0.49999997f, 0.50000006f, -0.3f}) x.push_back(static_cast<float>(i) + d);
  std::vector<Isa> isas = simd_isas();
  isas.push_back(Isa::scalar);
  for (const char* name : {"int8", "int8_sym", "int4", "int4_sym"}) {
    const Format f = parse_format(name);
    std::vector<float> want(x.size());
    std::size_t nan = 0, inf = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      want[i] = static_cast<float>(decode(f, encode(f, x[i])));
      nan += std::isnan(x[i]);
      inf += std::isinf(x[i]);
    }
    for (const Isa isa : isas) {
      SCOPED_TRACE(std::string(name) + " " + std::string(isa_name(isa)));
      std::vector<float> got = x;
      std::size_t n = 0, i = 0;
      detail::quant_kernels(isa).round_int(got.data(), got.size(), static_cast<float>(f.int_min),
                                           static_cast<float>(f.int_max), &n, &i);
      EXPECT_TRUE(same_bits(got, want));
      EXPECT_EQ(n, nan);
      EXPECT_EQ(i, inf);
    }
  }
}

}  // namespace
}  // namespace lowp::quant
