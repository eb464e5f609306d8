// The presets against published facts (OCP 8-bit FP and MX specs, AMD FNUZ, IEEE 754,
// NVIDIA TF32/NVFP4, the IEEE P3109 interim report's binary8pP table), aliases, generic
// eXmY / intN parsing and its errors, and format_name round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

#include "generic_formats.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp {
namespace {

struct Facts {
  const char* name;
  int bits, exp_bits, man_bits, bias;
  bool is_signed;
  Specials specials;
  double max, min_normal, min_subnormal;
  std::optional<std::uint32_t> nan, pos_inf, neg_inf;
};

constexpr auto none = std::nullopt;
using S = Specials;

const Facts kFloats[] = {
    {"float8_e4m3fn", 8, 4, 3, 7, true, S::fn, 448, 0x1p-6, 0x1p-9, 0x7F, none, none},
    {"float8_e5m2", 8, 5, 2, 15, true, S::ieee, 57344, 0x1p-14, 0x1p-16, 0x7E, 0x7C, 0xFC},
    {"float8_e4m3fnuz", 8, 4, 3, 8, true, S::fnuz, 240, 0x1p-7, 0x1p-10, 0x80, none, none},
    {"float8_e5m2fnuz", 8, 5, 2, 16, true, S::fnuz, 57344, 0x1p-15, 0x1p-17, 0x80, none, none},
    {"float8_e8m0fnu", 8, 8, 0, 127, false, S::fn, 0x1p127, 0x1p-127, 0x1p-127, 0xFF, none, none},
    {"float8_ue4m3", 7, 4, 3, 7, false, S::fn, 448, 0x1p-6, 0x1p-9, 0x7F, none, none},
    {"float6_e2m3fn", 6, 2, 3, 1, true, S::finite, 7.5, 1, 0.125, none, none, none},
    {"float6_e3m2fn", 6, 3, 2, 3, true, S::finite, 28, 0.25, 0.0625, none, none, none},
    {"float4_e2m1fn", 4, 2, 1, 1, true, S::finite, 6, 1, 0.5, none, none, none},
    {"bfloat16", 16, 8, 7, 127, true, S::ieee, 0x1.fep127, 0x1p-126, 0x1p-133, 0x7FC0, 0x7F80, 0xFF80},
    {"float16", 16, 5, 10, 15, true, S::ieee, 65504, 0x1p-14, 0x1p-24, 0x7E00, 0x7C00, 0xFC00},
    {"tfloat32", 19, 8, 10, 127, true, S::ieee, 0x1.ffcp127, 0x1p-126, 0x1p-136, 0x3FE00, 0x3FC00, 0x7FC00},
    {"float32", 32, 8, 23, 127, true, S::ieee, 0x1.fffffep127, 0x1p-126, 0x1p-149, 0x7FC00000, 0x7F800000, 0xFF800000},
    {"float8_e4m3", 8, 4, 3, 7, true, S::ieee, 240, 0x1p-6, 0x1p-9, 0x7C, 0x78, 0xF8},
    {"float8_e3m4", 8, 3, 4, 3, true, S::ieee, 15.5, 0x1p-2, 0x1p-6, 0x78, 0x70, 0xF0},
    {"float8_e4m3b11fnuz", 8, 4, 3, 11, true, S::fnuz, 30, 0x1p-10, 0x1p-13, 0x80, none, none},
    // P3109 binary8pP = p3109_k8pPse: bias 2^(7-P). binary8p1 had bias 63 (the 2023 interim
    // report); the current draft (gfloat) has 64 for P = 1 too, so code 1 is 2^-63.
    {"binary8p1", 8, 7, 0, 64, true, S::p3109, 0x1p62, 0x1p-63, 0x1p-63, 0x80, 0x7F, 0xFF},
    {"binary8p2", 8, 6, 1, 32, true, S::p3109, 0x1p31, 0x1p-31, 0x1p-32, 0x80, 0x7F, 0xFF},
    {"binary8p3", 8, 5, 2, 16, true, S::p3109, 0x1.8p15, 0x1p-15, 0x1p-17, 0x80, 0x7F, 0xFF},
    {"binary8p4", 8, 4, 3, 8, true, S::p3109, 0x1.cp7, 0x1p-7, 0x1p-10, 0x80, 0x7F, 0xFF},
    {"binary8p5", 8, 3, 4, 4, true, S::p3109, 0x1.ep3, 0x1p-3, 0x1p-7, 0x80, 0x7F, 0xFF},
    {"binary8p6", 8, 2, 5, 2, true, S::p3109, 0x1.fp1, 0x1p-1, 0x1p-6, 0x80, 0x7F, 0xFF},
    {"binary8p7", 8, 1, 6, 1, true, S::p3109, 63.0 / 32, 1, 0x1p-6, 0x80, 0x7F, 0xFF},
};

TEST(Registry, FloatPresetsMatchPublishedFacts) {
  for (const Facts& x : kFloats) {
    SCOPED_TRACE(x.name);
    const Format f = parse_format(x.name);
    EXPECT_EQ(f.kind, Kind::floating);
    EXPECT_EQ(f.bits(), x.bits);
    EXPECT_EQ(f.exp_bits, x.exp_bits);
    EXPECT_EQ(f.man_bits, x.man_bits);
    EXPECT_EQ(f.bias, x.bias);
    EXPECT_EQ(f.is_signed, x.is_signed);
    EXPECT_EQ(f.specials, x.specials);
    EXPECT_EQ(f.max_finite(), x.max);
    EXPECT_EQ(f.min_normal(), x.min_normal);
    EXPECT_EQ(f.min_subnormal(), x.min_subnormal);
    EXPECT_EQ(f.nan_code(), x.nan);
    EXPECT_EQ(f.has_nan(), x.nan.has_value());
    EXPECT_EQ(f.inf_code(false), x.pos_inf);
    EXPECT_EQ(f.inf_code(true), x.neg_inf);
    EXPECT_EQ(f.has_inf(), x.pos_inf.has_value());
    EXPECT_EQ(decode(f, f.max_finite_code()), x.max);
  }
  // Zeros: FNUZ and P3109 have a single zero, E8M0 has none.
  EXPECT_FALSE(parse_format("float8_e4m3fnuz").has_negative_zero());
  EXPECT_FALSE(parse_format("binary8p3").has_negative_zero());
  EXPECT_TRUE(parse_format("float8_e4m3fn").has_negative_zero());
  EXPECT_FALSE(parse_format("float8_e8m0fnu").has_zero());
  EXPECT_FALSE(parse_format("float8_ue4m3").has_negative_zero());
}

TEST(Registry, IntegerPresets) {
  struct I {
    const char* name;
    int bits;
    bool is_signed;
    int lo, hi;
  };
  for (const I& x : {I{"int8", 8, true, -128, 127}, I{"int8_sym", 8, true, -127, 127}, I{"int4", 4, true, -8, 7},
                     I{"int4_sym", 4, true, -7, 7}, I{"uint8", 8, false, 0, 255}, I{"uint4", 4, false, 0, 15}}) {
    SCOPED_TRACE(x.name);
    const Format f = parse_format(x.name);
    EXPECT_EQ(f.kind, Kind::integer);
    EXPECT_EQ(f.bits(), x.bits);
    EXPECT_EQ(f.is_signed, x.is_signed);
    EXPECT_EQ(f.int_min, x.lo);
    EXPECT_EQ(f.int_max, x.hi);
    EXPECT_EQ(f.max_finite(), x.hi);
    EXPECT_FALSE(f.has_nan());
    EXPECT_FALSE(f.has_inf());
  }
  EXPECT_FALSE(is_valid_code(parse_format("int8_sym"), 0x80));
  EXPECT_TRUE(is_valid_code(parse_format("int8"), 0x80));
  EXPECT_FALSE(is_valid_code(parse_format("int4_sym"), 0x8));
}

TEST(Registry, AliasesAndCase) {
  const std::pair<const char*, const char*> kAliases[] = {
      {"e4m3", "float8_e4m3fn"},  {"fp8_e4m3", "float8_e4m3fn"}, {"e5m2", "float8_e5m2"},
      {"fp8_e5m2", "float8_e5m2"}, {"e4m3fnuz", "float8_e4m3fnuz"}, {"e5m2fnuz", "float8_e5m2fnuz"},
      {"e8m0", "float8_e8m0fnu"}, {"ue8m0", "float8_e8m0fnu"},    {"ue4m3", "float8_ue4m3"},
      {"e2m3", "float6_e2m3fn"},  {"fp6_e2m3", "float6_e2m3fn"},  {"e3m2", "float6_e3m2fn"},
      {"fp6_e3m2", "float6_e3m2fn"}, {"e2m1", "float4_e2m1fn"},   {"fp4", "float4_e2m1fn"},
      {"fp4_e2m1", "float4_e2m1fn"}, {"bf16", "bfloat16"},        {"fp16", "float16"},
      {"half", "float16"},        {"tf32", "tfloat32"},           {"fp32", "float32"},
      {"i8", "int8"},             {"i8s", "int8_sym"},            {"i4", "int4"},
      {"i4s", "int4_sym"},        {"u8", "uint8"},                {"u4", "uint4"},
      {"BF16", "bfloat16"},       {"Float8_E4M3FN", "float8_e4m3fn"}};
  for (auto [alias, name] : kAliases) {
    SCOPED_TRACE(alias);
    EXPECT_EQ(parse_format(alias), parse_format(name));
    EXPECT_EQ(format_name(parse_format(alias)), name);
  }
  for (const auto& p : presets()) {
    EXPECT_EQ(format_name(p.format), p.name);
    EXPECT_EQ(parse_format(p.name), p.format);
    for (auto a : p.aliases) EXPECT_EQ(parse_format(a), p.format) << a;
    EXPECT_FALSE(p.note.empty()) << p.name;
  }
}

TEST(Registry, GenericSpellings) {
  const Format e3m3 = parse_format("e3m3");
  EXPECT_EQ(e3m3, minifloat(3, 3, Specials::ieee));
  EXPECT_EQ(e3m3.bias, 3);
  EXPECT_EQ(parse_format("e1m2"), minifloat(1, 2, Specials::finite));
  EXPECT_EQ(parse_format("e4m3fn"), parse_format("float8_e4m3fn"));
  EXPECT_EQ(parse_format("e3m4fnuz"), minifloat(3, 4, Specials::fnuz));
  EXPECT_EQ(parse_format("ue5m2"), minifloat(5, 2, Specials::ieee, false));
  EXPECT_EQ(parse_format("e4m3_b10").bias, 10);
  EXPECT_EQ(parse_format("e4m3fn_b-2"), minifloat(4, 3, Specials::fn, true, -2));
  EXPECT_EQ(parse_format("e8m0fnu"), parse_format("float8_e8m0fnu"));
  EXPECT_EQ(parse_format("e8m0fnu").ties, Ties::implicit_bit);
  EXPECT_EQ(parse_format("e8m0fnu_rne"), parse_format("e8m0-rne"));
  EXPECT_EQ(parse_format("e8m0fnu_rne").ties, Ties::even_code);
  EXPECT_EQ(format_name(parse_format("e7m0fnu_rne_b40")), "e7m0fnu_rne_b40");
  EXPECT_EQ(parse_format("e7m0fnu_b40").ties, Ties::implicit_bit);
  // P3109 by gfloat's names: unsigned extended has NaN at all ones and +Inf just below.
  EXPECT_EQ(parse_format("p3109_k8p4se"), parse_format("binary8p4"));
  EXPECT_EQ(parse_format("p3109_k8p3sf"), minifloat(5, 2, Specials::fnuz, true, 16));
  EXPECT_EQ(parse_format("p3109_k8p3ue"), minifloat(6, 2, Specials::p3109, false, 32));
  EXPECT_EQ(parse_format("p3109_k8p3uf"), minifloat(6, 2, Specials::fn, false, 32));
  EXPECT_EQ(parse_format("p3109_k8p3ue").nan_code(), 0xFFu);
  EXPECT_EQ(parse_format("p3109_k8p3ue").inf_code(false), 0xFEu);
  EXPECT_EQ(format_name(parse_format("p3109_k5p2ue")), "p3109_k5p2ue");
  EXPECT_EQ(format_name(parse_format("p3109_k6p3sf")), "p3109_k6p3sf");
  EXPECT_EQ(parse_format("ue4m3p3109"), minifloat(4, 3, Specials::p3109, false));
  EXPECT_EQ(parse_format("e2m1fin"), parse_format("float4_e2m1fn"));
  EXPECT_EQ(parse_format("e4m3p3109_b8"), parse_format("binary8p4"));
  EXPECT_EQ(parse_format("e4m3fn_nz"), minifloat(4, 3, Specials::fn, true, std::nullopt, false));
  EXPECT_EQ(parse_format("ue3m2fin_nz_b1"), minifloat(3, 2, Specials::finite, false, 1, false));
  EXPECT_EQ(parse_format("int6"), integer_format(6, true, false));
  EXPECT_EQ(parse_format("int6_sym"), integer_format(6, true, true));
  EXPECT_EQ(parse_format("uint16"), integer_format(16, false, false));
  EXPECT_EQ(parse_format("e5m10"), parse_format("float16"));
}

TEST(Registry, BadNamesThrowOneLineErrors) {
  for (const char* bad : {"", "e0m3", "e9m1", "e4m24", "e4", "e4m", "em3", "e4m3x", "e4m3_b", "e4m3_bx",
                          "e4m3_b500", "ue4m3fnuz", "e1m3ieee", "e8m0fnu_nz", "e4m3fn_rne",
                          "p3109_k8p8se", "p3109_k2p1se", "p3109_k16p1se", "p3109_k8p0ue", "p3109_k8p3xe", "p3109_k8p3s", "int1", "int17", "int40",
                          "int-3", "uint99999", "e4m3_b99999999999",
                          "uint8_sym", "float8", "nope", "int", "e4m3 ", " e4m3"}) {
    SCOPED_TRACE(std::string("'") + bad + "'");
    try {
      parse_format(bad);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
    }
  }
  try {
    parse_format("float9");
  } catch (const Error& e) {  // an unknown name lists the valid ones
    const std::string msg = e.what();
    for (const auto& p : presets()) EXPECT_NE(msg.find(p.name), std::string::npos) << p.name;
  }
}

TEST(Registry, DescriptorValidation) {
  EXPECT_THROW(minifloat(0, 3, Specials::ieee), Error);
  EXPECT_THROW(minifloat(9, 3, Specials::ieee), Error);
  EXPECT_THROW(minifloat(4, 24, Specials::ieee), Error);
  EXPECT_THROW(minifloat(4, -1, Specials::ieee), Error);
  EXPECT_THROW(minifloat(1, 3, Specials::ieee), Error);
  EXPECT_THROW(minifloat(4, 3, Specials::fnuz, false), Error);
  EXPECT_THROW(minifloat(4, 3, Specials::ieee, true, std::nullopt, false), Error);
  EXPECT_THROW(minifloat(4, 3, Specials::ieee, true, 1000), Error);
  EXPECT_THROW(integer_format(1, true, false), Error);
  EXPECT_THROW(integer_format(17, false, false), Error);
  EXPECT_THROW(integer_format(64, true, true), Error);
  EXPECT_THROW(integer_format(-1, true, false), Error);
}

// format_name names every descriptor, and the name parses back to it.
TEST(Registry, FormatNameRoundTrips) {
  std::size_t n = 0;
  for (const auto& fam : test::families())
    for (const Format& f : test::family_formats(fam, 2, 32)) {
      EXPECT_EQ(parse_format(format_name(f)), f) << format_name(f);
      ++n;
    }
  for (int bits = 2; bits <= 16; ++bits)
    for (int kind = 0; kind < 3; ++kind) {
      const Format f = integer_format(bits, kind != 2, kind == 1);
      EXPECT_EQ(parse_format(format_name(f)), f) << format_name(f);
    }
  EXPECT_GT(n, 500u);
}

}  // namespace
}  // namespace lowp
