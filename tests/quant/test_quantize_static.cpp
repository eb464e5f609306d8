// fake_quant_static (static scaling): the tensor-level scale from a given amax, against the
// independent reference of quantize_reference.hpp fed that amax in place of the tensor's own.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/quantize.hpp"
#include "quant/quantize_reference.hpp"

namespace {

using namespace lowp::quant;

// Elements N(0, 1), so that a bound of 1.5 clips some and a bound of 6 clips none; both are
// checked, the clipped ones saturating as the reference's scaled rules do.
TEST(QuantizeStatic, TensorScaleFromTheGivenAmaxMatchesTheReference) {
  const std::size_t rows = 8, cols = 48;
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = nd(gen);
  for (const char* text : {"e4m3", "e4m3:tensor:pow2", "e5m2", "int8_sym:tensor:int", "e4m3:tensor:mx", "nvfp4",
                           "e2m1:row:nvfp4"}) {
    const QuantSpec s = parse_quant_spec(text);
    ASSERT_TRUE(has_tensor_scale(s)) << text;
    for (const float bound : {1.5f, 6.0f, 0.0f}) {
      test_ref::Amaxes am = test_ref::amaxes(s, x.data(), rows, cols);
      if (s.granularity == Granularity::tensor) am.of_element.assign(rows * cols, bound);
      am.tensor = bound;  // NVFP4's level 1; its blocks keep their own amax
      std::vector<float> got = x;
      fake_quant_static(s, got.data(), rows, cols, bound);
      std::size_t clipped = 0;
      for (std::size_t i = 0; i < rows * cols; ++i) {
        const test_ref::Expected e = test_ref::expected(s, x.data(), am, cols, i / cols, i % cols);
        ASSERT_EQ(std::memcmp(&got[i], &e.value, 4), 0)
            << text << " amax " << bound << " element " << i << ": " << got[i] << " vs " << e.value;
        clipped += std::fabs(x[i]) > bound;
      }
      if (bound == 1.5f) {
        EXPECT_GT(clipped, 0u) << "the test clips nothing";
      }
    }
  }
}

TEST(QuantizeStatic, SpecsWithoutATensorScaleAreRefused) {
  std::vector<float> x(32, 1.0f);
  for (const char* text : {"mxfp8", "e4m3:row:amax", "bf16", "e4m3:col:amax", "int4:b32:mse"}) {
    EXPECT_FALSE(has_tensor_scale(parse_quant_spec(text))) << text;
    EXPECT_THROW(fake_quant_static(parse_quant_spec(text), x.data(), 1, 32, 1.0f), lowp::Error) << text;
  }
  EXPECT_THROW(fake_quant_static(parse_quant_spec("e4m3"), x.data(), 1, 32, -1.0f), lowp::Error);
  EXPECT_THROW(fake_quant_static(parse_quant_spec("e4m3"), x.data(), 1, 32, INFINITY), lowp::Error);
}

}  // namespace
