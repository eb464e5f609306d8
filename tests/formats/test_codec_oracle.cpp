// The scalar codec against the exact oracle: every boundary point of every 4/6/8-bit format
// (ties, +-1/2 ulps, overflow, underflow, specials) in every mode and option, from float and
// double, and 10^6 random float and 10^6 random double inputs per 4/6/8-bit format, each in
// every mode (2*10^5 for bf16, fp16, tf32). About 3 s of CPU per format in Release.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "generic_formats.hpp"
#include "lowp/formats/registry.hpp"
#include "oracle_sampling.hpp"

namespace lowp::test {
namespace {

const char* const kSmallFormats[] = {
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float8_ue4m3",
    "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "float8_e4m3", "float8_e3m4", "binary8p1",
    "binary8p2", "binary8p3", "binary8p4", "binary8p5", "binary8p6", "binary8p7",
    "float8_e8m0fnu_rne", "p3109_k8p3ue", "p3109_k6p3sf",
    "int8", "int8_sym", "int4", "int4_sym", "uint8", "uint4"};

// Random inputs per type (float and double), each checked in every mode and option.
// LOWP_ORACLE_SAMPLES_DIV=N runs a 1/N of them: 10 in the default CTest tier and under
// scripts/sanitize-check (ASan makes the oracle 20x slower); the full count runs in the
// `exhaustive` tier (tests/formats/CMakeLists.txt).
std::size_t samples(std::size_t n) {
  const char* e = std::getenv("LOWP_ORACLE_SAMPLES_DIV");
  const long d = e ? std::atol(e) : 1;
  return d > 1 ? n / static_cast<std::size_t>(d) : n;
}
const std::size_t kSmallSamples = samples(1000000), kWideSamples = samples(200000);

// A fixed seed per format (FNV-1a of the name), the same on every platform.
std::uint64_t seed_of(const char* name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (; *name; ++name) h = (h ^ static_cast<unsigned char>(*name)) * 0x100000001b3ULL;
  return h;
}

std::string test_name(const testing::TestParamInfo<const char*>& info) { return info.param; }

class SmallFormat : public testing::TestWithParam<const char*> {};

TEST_P(SmallFormat, BoundariesMatchOracle) { check_boundaries(parse_format(GetParam())); }

TEST_P(SmallFormat, RandomSampleMatchesOracle) {
  check_random(parse_format(GetParam()), kSmallSamples, seed_of(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Codec, SmallFormat, testing::ValuesIn(kSmallFormats), test_name);

class WideFormat : public testing::TestWithParam<const char*> {};

TEST_P(WideFormat, BoundariesMatchOracle) { check_boundaries(parse_format(GetParam()), 64); }

TEST_P(WideFormat, RandomSampleMatchesOracle) {
  check_random(parse_format(GetParam()), kWideSamples, seed_of(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Codec, WideFormat, testing::Values("bfloat16", "float16", "tfloat32"), test_name);

// float32 itself: float inputs are exact, double inputs round once.
TEST(Codec, Float32FromDoubleMatchesOracle) { check_random(parse_format("float32"), 100000, 32); }

// Biases far from the default: ranges beyond float's (only double inputs reach them) or
// shifted well inside it.
TEST(Codec, ExtremeBiasesMatchOracle) {
  for (const char* name : {"e8m7_b300", "e8m3_b-100", "e5m2_b-20", "e4m3fn_b30", "e8m0fnu_b200", "ue6m4_b-40"}) {
    const Format f = parse_format(name);
    check_boundaries(f, f.bits() > 8 ? 16 : 1);
    check_random(f, 20000, seed_of(name));
  }
}

// Generic formats up to 8 bits (every split, each Specials kind, signed or not, with or without
// zero, odd biases): boundaries and a small random sample.
class GenericFamily : public testing::TestWithParam<Family> {};

TEST_P(GenericFamily, MatchesOracle) {
  const auto all = family_formats(GetParam(), 2, 8);
  for (const Format& f : all) {
    check_boundaries(f);
    check_random(f, 2000, seed_of(format_name(f).c_str()));
  }
  EXPECT_GT(all.size(), 10u);
}

INSTANTIATE_TEST_SUITE_P(Codec, GenericFamily, testing::ValuesIn(families()),
                         [](const testing::TestParamInfo<Family>& i) { return i.param.name(); });

// Published behaviour (OCP 8-bit FP spec, OCP MX spec, ml_dtypes, the example), as
// literal codes: guards the reference policy itself against a misreading shared with the codec.
std::uint32_t enc(const char* name, double x, Round r = Round::nearest_even, bool saturate = false) {
  CastOptions o;
  o.round = r;
  o.saturate = saturate;
  return encode(parse_format(name), x, o);
}

TEST(CodecExamples, Fp8) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  EXPECT_EQ(enc("float8_e5m2", 1000), 0x64u);
  EXPECT_EQ(enc("float8_e5m2", 61439), 0x7Bu);
  EXPECT_EQ(enc("float8_e5m2", 61440), 0x7Cu);  // tie with the first overflow, odd max -> Inf
  EXPECT_EQ(enc("float8_e5m2", -1e9), 0xFCu);
  EXPECT_EQ(enc("float8_e5m2", 1e9, Round::toward_zero), 0x7Bu);
  EXPECT_EQ(enc("float8_e5m2", 1e9, Round::toward_neg), 0x7Bu);
  EXPECT_EQ(enc("float8_e5m2", 1e9, Round::toward_pos), 0x7Cu);
  EXPECT_EQ(enc("float8_e5m2", -1e9, Round::toward_pos), 0xFBu);
  EXPECT_EQ(enc("float8_e5m2", 1e9, Round::nearest_even, true), 0x7Bu);
  EXPECT_EQ(enc("float8_e5m2", inf), 0x7Cu);
  EXPECT_EQ(enc("float8_e5m2", inf, Round::toward_zero), 0x7Cu);  // an infinite input is exact
  EXPECT_EQ(enc("float8_e5m2", -inf, Round::nearest_even, true), 0xFBu);
  EXPECT_EQ(enc("float8_e5m2", nan), 0x7Eu);
  EXPECT_EQ(enc("float8_e5m2", -nan), 0xFEu);
  EXPECT_EQ(enc("bfloat16", -nan), 0xFFC0u);
  EXPECT_EQ(enc("float8_e5m2", 0x1p-16), 0x01u);
  EXPECT_EQ(enc("float8_e5m2", 0x1p-17), 0x00u);

  EXPECT_EQ(enc("float8_e4m3fn", 448), 0x7Eu);
  EXPECT_EQ(enc("float8_e4m3fn", 464), 0x7Eu);  // tie between 448 (even) and 480
  EXPECT_EQ(enc("float8_e4m3fn", 464.5), 0x7Fu);
  EXPECT_EQ(enc("float8_e4m3fn", 1e4, Round::nearest_even, true), 0x7Eu);
  EXPECT_EQ(enc("float8_e4m3fn", -1e4, Round::nearest_even, true), 0xFEu);
  EXPECT_EQ(enc("float8_e4m3fn", inf), 0x7Fu);
  // A NaN keeps the sign (ml_dtypes, PyTorch): -466 overflows to 0xFF, and -NaN is 0xFF.
  EXPECT_EQ(enc("float8_e4m3fn", -466.0), 0xFFu);
  EXPECT_EQ(enc("float8_e4m3fn", -464.0), 0xFEu);
  EXPECT_EQ(enc("float8_e4m3fn", -inf), 0xFFu);
  EXPECT_EQ(enc("float8_e4m3fn", -nan), 0xFFu);
  EXPECT_EQ(enc("float8_e4m3fn", nan), 0x7Fu);
  EXPECT_EQ(enc("float8_e4m3fn", -inf, Round::nearest_even, true), 0xFEu);
  EXPECT_EQ(enc("float8_e4m3fn", 0x1p-9), 0x01u);
  EXPECT_EQ(enc("float8_e4m3fn", 0x1p-10), 0x00u);
  EXPECT_EQ(enc("float8_e4m3fn", -0x1p-10), 0x80u);
  EXPECT_EQ(enc("float8_e4m3fn", 0x1.0001p-10), 0x01u);

  EXPECT_EQ(enc("float8_e4m3fnuz", 240), 0x7Fu);
  EXPECT_EQ(enc("float8_e4m3fnuz", 248), 0x80u);  // tie, odd max: overflow to the NaN
  EXPECT_EQ(enc("float8_e4m3fnuz", -0.0), 0x00u);
  EXPECT_EQ(enc("float8_e4m3fnuz", -0x1p-11), 0x00u);  // no -0
  EXPECT_EQ(enc("float8_e5m2fnuz", 57344), 0x7Fu);
  EXPECT_EQ(enc("float8_e5m2fnuz", nan), 0x80u);
  EXPECT_EQ(enc("float8_e5m2fnuz", -nan), 0x80u);  // the one NaN for either sign
  EXPECT_EQ(enc("float8_e4m3fnuz", -inf), 0x80u);
  EXPECT_EQ(enc("float8_e4m3fnuz", -1e4), 0x80u);

  EXPECT_EQ(enc("float8_e8m0fnu", 1), 0x7Fu);
  // ml_dtypes' ties (the implicit 1 is the last kept bit): a tie rounds up; e8m0-rne to the even field.
  EXPECT_EQ(enc("float8_e8m0fnu", 1.5), 0x80u);  // tie between fields 127 and 128
  EXPECT_EQ(enc("float8_e8m0fnu", 3), 0x81u);    // tie between fields 128 and 129: up
  EXPECT_EQ(enc("e8m0-rne", 1.5), 0x80u);        // the even field 128
  EXPECT_EQ(enc("e8m0-rne", 3), 0x80u);          // the even field 128
  EXPECT_EQ(enc("float8_e8m0fnu", 0x1.4p-127), 0x01u);  // above 2^-127: 2^-126, as ml_dtypes
  EXPECT_EQ(enc("e8m0-rne", 0x1.4p-127), 0x00u);        // correctly rounded: 2^-127
  EXPECT_EQ(enc("float8_e8m0fnu", 0), 0xFFu);    // no zero: NaN, as ml_dtypes
  EXPECT_EQ(enc("float8_e8m0fnu", -0.0), 0xFFu);
  EXPECT_EQ(enc("float8_e8m0fnu", 0, Round::nearest_even, true), 0x00u);  // saturating: the smallest value 2^-127
  EXPECT_EQ(enc("float8_e8m0fnu", 0x1p-140), 0x00u);  // tiny nonzero: the smallest value
  EXPECT_EQ(enc("float8_e8m0fnu", -std::numeric_limits<double>::infinity()), 0xFFu);
  EXPECT_EQ(enc("float8_e8m0fnu", 0x1p-127), 0x00u);
  EXPECT_EQ(enc("float8_e8m0fnu", 0x1p127), 0xFEu);
  EXPECT_EQ(enc("float8_e8m0fnu", nan), 0xFFu);
  EXPECT_EQ(enc("float8_e8m0fnu", -1), 0xFFu);

  EXPECT_EQ(enc("float8_ue4m3", 448), 0x7Eu);
  EXPECT_EQ(enc("float8_ue4m3", -1), 0x7Fu);
  EXPECT_EQ(enc("float8_ue4m3", -0.0), 0x00u);

  EXPECT_EQ(enc("binary8p3", inf), 0x7Fu);
  EXPECT_EQ(enc("binary8p3", -inf), 0xFFu);
  EXPECT_EQ(enc("binary8p3", nan), 0x80u);
  EXPECT_EQ(enc("binary8p3", -0.0), 0x00u);
  EXPECT_EQ(enc("binary8p3", 1.0), 0x40u);
}

TEST(CodecExamples, Fp6Fp4) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(enc("float4_e2m1fn", 5), 0x6u);     // tie between 4 (even) and 6
  EXPECT_EQ(enc("float4_e2m1fn", 7), 0x7u);     // beyond max: always saturates
  EXPECT_EQ(enc("float4_e2m1fn", -100), 0xFu);
  EXPECT_EQ(enc("float4_e2m1fn", 0.25), 0x0u);
  EXPECT_EQ(enc("float4_e2m1fn", 0.75), 0x2u);
  EXPECT_EQ(enc("float4_e2m1fn", std::nan("")), 0x8u);   // no NaN: ml_dtypes' stand-in, the code of -0
  EXPECT_EQ(enc("float4_e2m1fn", -std::nan("")), 0x0u);  // ... negated: +0
  EXPECT_EQ(enc("float6_e2m3fn", std::nan("")), 0x20u);
  EXPECT_EQ(enc("float6_e3m2fn", -std::nan("")), 0x00u);
  EXPECT_EQ(enc("float4_e2m1fn", -inf), 0xFu);
  EXPECT_EQ(enc("float6_e2m3fn", 8), 0x1Fu);
  EXPECT_EQ(enc("float6_e3m2fn", 28), 0x1Fu);
  EXPECT_EQ(enc("float6_e3m2fn", 0x1p-4), 0x01u);
}

TEST(CodecExamples, Integers) {
  EXPECT_EQ(enc("int8", 2.5), 2u);
  EXPECT_EQ(enc("int8", 3.5), 4u);
  EXPECT_EQ(enc("int8", 2.5, Round::nearest_away), 3u);
  EXPECT_EQ(enc("int8", -2.5), 0xFEu);
  EXPECT_EQ(enc("int8", -128.6), 0x80u);
  EXPECT_EQ(enc("int8", 1000), 0x7Fu);
  EXPECT_EQ(enc("int8", std::nan("")), 0u);
  EXPECT_EQ(enc("int8_sym", -200), 0x81u);
  EXPECT_EQ(enc("int4", -9), 0x8u);
  EXPECT_EQ(enc("int4_sym", -9), 0x9u);
  EXPECT_EQ(enc("uint8", -3), 0u);
  EXPECT_EQ(enc("uint8", 255.4), 255u);
  EXPECT_EQ(enc("uint4", 300), 15u);
}

}  // namespace
}  // namespace lowp::test
