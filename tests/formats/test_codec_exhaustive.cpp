// Every code of every format of at most 16 bits: decode equals the spec formula (computed
// exactly by the test reference), and the value re-encodes to the same code from float and
// from double in every rounding mode, saturating or not; NaN codes decode to NaN and NaN
// encodes to the canonical NaN; is_valid_code rejects only the codes a format never produces.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "generic_formats.hpp"
#include "lowp/formats/registry.hpp"
#include "oracle_sampling.hpp"

namespace lowp::test {
namespace {

// Compares decode with the spec and re-encodes each code (formats of at most 16 bits).
void check_every_code(const Format& f, Failures& out) {
  ASSERT_LE(f.bits(), 16);
  const Spec s = make_spec(f);
  const std::string name = format_name(f);
  SplitMix rng{0xc0de};
  auto fail = [&](std::uint32_t code, const std::string& what) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s code 0x%x: ", name.c_str(), code);
    out.fail(buf + what);
  };
  const std::uint32_t mask = f.code_mask();
  const double inf = std::numeric_limits<double>::infinity();
  // Bits above the width are not codes.
  if (is_valid_code(f, mask + 1) || is_valid_code(f, 0xffffffffu)) fail(mask + 1, "wider code reported valid");
  for (std::uint32_t code = 0; code <= mask; ++code) {
    const CodeMeaning c = spec_decode(f, code);
    const double d = decode(f, code);
    out.checks++;
    // int_min of a symmetric integer format is the one code a format never produces.
    const bool invalid = f.kind == Kind::integer && c.negative && -c.magnitude < Real(f.int_min);
    if (is_valid_code(f, code) == invalid) fail(code, "is_valid_code wrong");
    if (is_nan_code(f, code) != c.nan) fail(code, "is_nan_code wrong");
    if (decode(f, code | (mask + 1)) != d && !std::isnan(d)) fail(code, "decode reads bits above the width");
    if (c.nan) {
      if (!std::isnan(d)) fail(code, "NaN code does not decode to NaN");
      // A NaN keeps its sign both ways (ml_dtypes): the code's sign bit, and back to the
      // canonical NaN of that sign.
      if (std::signbit(d) != c.negative) fail(code, "NaN decodes with the wrong sign");
      if (encode(f, d) != expected_nan_code(f, s, c.negative)) fail(code, "its NaN re-encodes to another sign");
      continue;
    }
    const double want = c.inf ? inf : c.magnitude.convert_to<double>();
    if (std::isnan(d) || std::abs(d) != want || std::signbit(d) != c.negative) {
      fail(code, "decodes to " + std::to_string(d));
      continue;
    }
    if (invalid) continue;
    const float fd = static_cast<float>(d);
    const bool float_exact = static_cast<double>(fd) == d;
    const bool subnormal = !c.inf && want != 0 && Real(want) < s.min_normal && f.subnormals;
    const double max = s.max.convert_to<double>();
    for (int opts = 0; opts < 4; ++opts) {
      CastOptions o;
      o.saturate = (opts & 1) != 0;
      o.flush_subnormals = (opts & 2) != 0;
      if (o.flush_subnormals && subnormal) continue;  // flushing changes these by design
      for (Round r : kAllModes) {
        o.round = r;
        const auto rand = static_cast<std::uint32_t>(rng.next());
        const std::string how = std::string(round_name(r)) + " opts " + std::to_string(opts);
        const std::uint32_t from_double = encode(f, d, o, rand);
        if (c.inf && o.saturate) {  // an infinite input saturates to +-max
          if (decode(f, from_double) != (c.negative ? -max : max)) fail(code, "saturated Inf, " + how);
          continue;
        }
        if (from_double != code) fail(code, "encode(double) " + how + " gives " + std::to_string(from_double));
        if (float_exact && encode(f, fd, o, rand) != code) fail(code, "encode(float) " + how);
      }
    }
  }
  // NaN inputs give the canonical NaN of their sign in every mode and option. Formats without
  // NaN: ml_dtypes' -0 for +NaN and +0 for -NaN where the format has -0, else code 0 (+0, or
  // the smallest value without zero).
  const std::uint32_t sign = f.is_signed && f.kind == Kind::floating ? 1u << (f.exp_bits + f.man_bits) : 0u;
  for (Round r : kAllModes)
    for (bool sat : {false, true}) {
      CastOptions o{r, sat, false};
      for (bool negative : {false, true}) {
        const std::uint32_t want = s.has_nan ? expected_nan_code(f, s, negative)
                                   : s.has_negative_zero && !negative ? sign : 0u;
        const double x = std::copysign(std::numeric_limits<double>::quiet_NaN(), negative ? -1.0 : 1.0);
        if (encode(f, x, o) != want || encode(f, static_cast<float>(x), o) != want) fail(want, "encode(NaN)");
      }
    }
  if (s.has_nan && (f.nan_code() != s.nan_code)) fail(s.nan_code, "nan_code() is not the canonical NaN");
}

class Preset : public testing::TestWithParam<std::string> {};

TEST_P(Preset, EveryCodeRoundTrips) {
  Failures out;
  check_every_code(parse_format(GetParam()), out);
  out.report(GetParam());
}

std::vector<std::string> small_presets() {
  std::vector<std::string> v;
  for (const auto& p : presets())
    if (p.format.bits() <= 16) v.emplace_back(p.name);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Codec, Preset, testing::ValuesIn(small_presets()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

class Generic : public testing::TestWithParam<Family> {};

// Widths up to 12 bits, every split; then 13..16 bits, every split, for the family.
TEST_P(Generic, EveryCodeRoundTrips) {
  Failures out;
  const auto all = family_formats(GetParam(), 2, 12);
  for (const Format& f : all) check_every_code(f, out);
  for (const Format& f : family_formats(GetParam(), 16, 16))
    if (f.man_bits % 5 == 0 || f.exp_bits == 8) check_every_code(f, out);
  out.report(GetParam().name());
  EXPECT_GT(all.size(), 20u);
}

INSTANTIATE_TEST_SUITE_P(Codec, Generic, testing::ValuesIn(families()),
                         [](const testing::TestParamInfo<Family>& i) { return i.param.name(); });

}  // namespace
}  // namespace lowp::test
