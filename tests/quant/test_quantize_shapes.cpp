// Shapes and special values: padding invariance, shape errors, zero / NaN / Inf groups,
// malformed tensors, and bits_per_element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lowp/formats/registry.hpp"
#include "lowp/quant/quantize.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

using test::kInf;
using test::kNaN;

std::vector<float> dq(const QuantizedTensor& q) {
  std::vector<float> out(q.rows * q.cols);
  dequantize(q, out.data());
  return out;
}

// The padded tensor quantizes its unpadded part exactly as the same data zero-padded by hand
// to a multiple of the block does.
TEST(QuantizeShapes, PaddingNeverChangesTheUnpaddedPart) {
  struct Case {
    const char* spec;
    std::size_t rows, cols, prow, pcol;  // real shape, hand-padded shape
  };
  const Case cases[] = {
      {"mxfp4:pad", 5, 37, 5, 64},      {"nvfp4:pad", 3, 50, 3, 64},     {"e4m3:b128:pad", 4, 130, 4, 256},
      {"e4m3:t16:pad", 20, 20, 32, 32}, {"e2m3:t8:rceil:pad", 9, 13, 16, 16}, {"e4m3:t128:amax:pad", 130, 129, 256, 256},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    const QuantSpec s = parse_quant_spec(c.spec);
    const std::vector<float> x = test::normal_floats(c.rows * c.cols, 17);
    std::vector<float> padded(c.prow * c.pcol, 0.0f);
    for (std::size_t r = 0; r < c.rows; ++r)
      for (std::size_t k = 0; k < c.cols; ++k) padded[r * c.pcol + k] = x[r * c.cols + k];
    QuantSpec exact = s;
    exact.pad = false;
    const std::vector<float> a = dq(quantize(s, x.data(), c.rows, c.cols));
    const std::vector<float> b = dq(quantize(exact, padded.data(), c.prow, c.pcol));
    std::vector<float> f = x;
    fake_quant(s, f.data(), c.rows, c.cols);
    for (std::size_t r = 0; r < c.rows; ++r)
      for (std::size_t k = 0; k < c.cols; ++k) {
        ASSERT_EQ(a[r * c.cols + k], b[r * c.pcol + k]) << r << "," << k;
        ASSERT_EQ(f[r * c.cols + k], a[r * c.cols + k]) << r << "," << k;
      }
    // NVFP4's tensor scale too: padding zeros do not move the tensor amax.
    EXPECT_EQ(quantize(s, x.data(), c.rows, c.cols).tensor_scale, quantize(exact, padded.data(), c.prow, c.pcol).tensor_scale);
  }
}

TEST(QuantizeShapes, ShapeErrorsNameTheShapeAndTheBlock) {
  const std::vector<float> x(64 * 64, 1.0f);
  test::expect_error([&] { quantize(parse_quant_spec("mxfp4"), x.data(), 5, 37); }, {"5x37", "37 columns", "block size 32", ":pad"});
  test::expect_error([&] { fake_quant(parse_quant_spec("nvfp4"), std::vector<float>(x).data(), 2, 24); }, {"2x24", "block size 16"});
  test::expect_error([&] { quantize(parse_quant_spec("e4m3:t16"), x.data(), 20, 32); }, {"20x32", "20 rows", "tile size 16"});
  test::expect_error([&] { bits_per_element(parse_quant_spec("mxfp8"), 3, 33); }, {"3x33", "block size 32"});
  test::expect_error([&] { quantize(parse_quant_spec("e4m3"), nullptr, 2, 2); }, {"quantize", "null"});
  QuantSpec zero = parse_quant_spec("e4m3:b32");
  zero.block = 0;
  test::expect_error([&] { quantize(zero, x.data(), 2, 32); }, {"block size 0"});
  // Granularities without blocks accept any shape.
  for (const char* s : {"e4m3", "e4m3:row", "e4m3:col", "int8:row:int"})
    EXPECT_NO_THROW(quantize(parse_quant_spec(s), x.data(), 7, 13)) << s;
}

TEST(QuantizeShapes, EmptyTensors) {
  for (const char* s : {"e4m3", "mxfp4", "nvfp4", "e4m3:col", "e4m3:row"}) {
    const QuantizedTensor q = quantize(parse_quant_spec(s), nullptr, 0, 32);
    EXPECT_TRUE(q.codes.empty()) << s;
    dequantize(q, nullptr);
    EXPECT_EQ(fake_quant(parse_quant_spec(s), nullptr, 0, 32).nan_inputs, 0u);
  }
}

TEST(QuantizeShapes, MalformedTensorsAreRejectedByDequantize) {
  const std::vector<float> x(4 * 64, 1.0f);
  std::vector<float> out(x.size());
  QuantizedTensor q = quantize(parse_quant_spec("mxfp4"), x.data(), 4, 64);
  QuantizedTensor short_codes = q;
  short_codes.codes.resize(10);
  test::expect_error([&] { dequantize(short_codes, out.data()); }, {"dequantize", "10 code bytes", "need 128", "4x64"});
  // A tensor built by hand with an amax rule and only `scales`: the value is code * scale.
  QuantizedTensor by_hand;
  by_hand.spec = parse_quant_spec("e4m3:row");
  by_hand.rows = 2;
  by_hand.cols = 2;
  by_hand.codes = {0x38, 0x40, 0x38, 0xc0};  // 1, 2, 1, -2 in E4M3
  by_hand.scales = {0.5f, 3.0f};
  std::vector<float> v(4);
  dequantize(by_hand, v.data());
  EXPECT_EQ(v, (std::vector<float>{0.5f, 1.0f, 3.0f, -6.0f}));
  QuantizedTensor few_scales = q;
  few_scales.scales.resize(3);
  test::expect_error([&] { dequantize(few_scales, out.data()); }, {"dequantize", "3 scales", "need 8"});
}

// Zero / NaN / Inf groups: no division by zero, NaN counted, one NaN does not spoil its
// block's scale (the scale comes from the finite elements).
TEST(QuantizeShapes, ZeroNanAndInfGroups) {
  std::vector<float> x(2 * 32, 0.0f);  // block 0: all zero; block 1: 1..32 with a NaN and Infs
  for (std::size_t i = 0; i < 32; ++i) x[32 + i] = static_cast<float>(i + 1) / 8.0f;
  x[33] = kNaN;
  x[34] = kInf;
  x[35] = -kInf;
  for (const char* s : {"mxfp8:tensor", "mxfp8", "mxfp4", "nvfp4", "e4m3:b32", "e4m3:b32:pow2", "e4m3:b32:rceil", "int8_sym:b32:int", "e2m1:b32:mse"}) {
    SCOPED_TRACE(s);
    const QuantSpec spec = parse_quant_spec(s);
    const QuantizedTensor q = quantize(spec, x.data(), 2, 32);
    EXPECT_EQ(q.nan_inputs, 1u);
    EXPECT_EQ(q.inf_inputs, 2u);
    for (const float sc : q.scales) EXPECT_TRUE(std::isfinite(sc) && sc > 0) << sc;
    const std::vector<float> v = dq(q);
    std::vector<float> f = x;
    const FakeQuantReport rep = fake_quant(spec, f.data(), 2, 32);
    EXPECT_EQ(rep.nan_inputs, 1u);
    EXPECT_EQ(rep.inf_inputs, 2u);
    for (std::size_t i = 0; i < 32; ++i) EXPECT_EQ(v[i], 0.0f) << "zero block, element " << i;
    // The NaN stays NaN where the format has one, else it encodes as 0 (FP4, integers).
    if (spec.format.has_nan()) EXPECT_TRUE(std::isnan(v[33]));
    else EXPECT_EQ(v[33], 0.0f);
    // Infs saturate to the largest value of the block's scale, with their sign.
    EXPECT_TRUE(std::isfinite(v[34]) && v[34] > 0) << v[34];
    EXPECT_EQ(v[35], -v[34]);
    // The finite elements keep a scale from amax 4 (the NaN and Infs are not counted in it).
    EXPECT_NEAR(v[63], 4.0f, 4.0f * 0.3f);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isnan(v[i]) || !std::isnan(f[i])) {
        EXPECT_EQ(f[i], v[i]) << i;
      }
  }
  // A tensor of zeros under every rule: zeros out, finite scales.
  const std::vector<float> z(64, 0.0f);
  for (const char* s : {"e4m3", "e4m3:pow2", "mxfp4", "nvfp4", "int8:row", "e2m1:b16:mse", "e4m3:col:rceil"}) {
    const QuantizedTensor q = quantize(parse_quant_spec(s), z.data(), 2, 32);
    for (const float v : dq(q)) EXPECT_EQ(v, 0.0f) << s;
    for (const float sc : q.scales) EXPECT_TRUE(std::isfinite(sc) && sc > 0) << s;
    EXPECT_TRUE(std::isfinite(q.tensor_scale) && q.tensor_scale > 0) << s;
  }
}

// fake_quant into another array: dequantize(quantize(x)) (the codes' path, the definition),
// with x left as it was, under every kind of rule (none, per tensor, fused row / block
// passes, the two-level NVFP4, tiles, MSE, stochastic rounding), padded and not, one thread's
// piece and many.
TEST(QuantizeShapes, FakeQuantIntoAnotherArrayIsDequantizeOfQuantize) {
  struct Case {
    const char* spec;
    std::size_t rows, cols;
  };
  const Case cases[] = {{"bf16", 40, 96},           {"int8:row", 40, 96},         {"e4m3:tensor:amax", 40, 96},
                        {"mxfp8", 300, 256},        {"e4m3:b32:rceil", 40, 96},   {"nvfp4", 300, 256},
                        {"e2m1:t16:nvfp4", 48, 96}, {"e2m1:b16:mse", 8, 64},      {"e5m2:b32:mx:stochastic", 300, 256},
                        {"e4m3:b128:amax:pad", 40, 200}, {"int8_sym:b32:int", 40, 96}};
  std::uint32_t state = 7;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    QuantSpec spec = parse_quant_spec(c.spec);
    spec.seed = 11;
    std::vector<float> x(c.rows * c.cols);
    for (float& v : x) v = static_cast<float>(static_cast<std::int32_t>(state = state * 1664525u + 1013904223u)) * 0x1p-28f;
    x[5] = kNaN;
    x[9] = -kInf;
    const std::vector<float> before = x;
    const std::vector<float> want = dq(quantize(spec, x.data(), c.rows, c.cols));
    std::vector<float> out(x.size(), 123.0f);
    const FakeQuantReport rep = fake_quant(spec, x.data(), out.data(), c.rows, c.cols);
    EXPECT_EQ(rep.nan_inputs, 1u);
    EXPECT_EQ(rep.inf_inputs, 1u);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(std::isnan(out[i]), std::isnan(want[i])) << i;
      if (!std::isnan(want[i])) {
        ASSERT_EQ(out[i], want[i]) << i;
      }
      ASSERT_TRUE(x[i] == before[i] || (std::isnan(x[i]) && std::isnan(before[i]))) << "input changed at " << i;
    }
  }
}

TEST(QuantizeShapes, BitsPerElementCountsTheScales) {
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("mxfp8"), 64, 1024), 8.25);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("mxfp6"), 64, 1024), 6.25);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("mxfp4"), 64, 1024), 4.25);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("nvfp4"), 64, 1024), 4.5 + 32.0 / 65536);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("e4m3"), 64, 1024), 8.0 + 32.0 / 65536);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("e4m3:row"), 64, 1024), 8.0 + 32.0 / 1024);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("e4m3:col"), 64, 1024), 8.0 + 32.0 / 64);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("e4m3:b128"), 64, 1024), 8.25);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("e4m3:t128"), 128, 1024), 8.0 + 32.0 / 16384);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("bf16"), 64, 1024), 16.0);
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("int8:row"), 64, 1024), 8.0 + 32.0 / 1024);
  // Padded blocks: 37 columns make 2 blocks of 32 per row.
  EXPECT_DOUBLE_EQ(bits_per_element(parse_quant_spec("mxfp4:pad"), 5, 37), 4.0 + 8.0 * 10 / 185);
  const std::vector<float> x(64 * 1024, 0.5f);
  EXPECT_DOUBLE_EQ(quantize(parse_quant_spec("mxfp4"), x.data(), 64, 1024).bits_per_element(), 4.25);
}

}  // namespace
}  // namespace lowp::quant
