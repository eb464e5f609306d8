// The `lowp` CLI, run in-process through run_cli. Expected codes and values come from the
// format specifications (OCP FP8/MX, IEEE 754), worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/rng.hpp"

namespace {

using lowp::test::lowp_run;
using lowp::test::Result;

// Casts one value and returns the output line without its newline (or the error on failure).
std::string cast1(const std::string& format, const std::string& value, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"cast", "--to", format};
  args.insert(args.end(), extra.begin(), extra.end());
  const Result r = lowp_run(args, value + "\n");
  if (r.code != 0) return "exit " + std::to_string(r.code) + ": " + r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(!r.out.empty() && r.out.back() == '\n') << r.out;
  return r.out.substr(0, r.out.size() - 1);
}

// One error line on stderr, nothing else.
void expect_one_error_line(const Result& r, const std::string& line) {
  EXPECT_EQ(r.err, line + "\n");
}

TEST(Cli, IssueExample) {
  const Result r = lowp_run({"cast", "--to", "float8_e5m2"}, "1000\n");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "0x64 1024\n");  // 1000 lies in [896, 1024]: 1024 = 1.0 * 2^10, E = 25 -> 25 << 2
  EXPECT_EQ(r.err, "");
}

TEST(Cli, CodesHaveTheFormatsHexWidth) {
  EXPECT_EQ(cast1("bf16", "1"), "0x3f80 1");         // 16 bits: 4 digits
  EXPECT_EQ(cast1("tf32", "1"), "0x1fc00 1");        // 19 bits: 5 digits, 127 << 10
  EXPECT_EQ(cast1("e2m1", "6"), "0x7 6");            // 4 bits: 1 digit
  EXPECT_EQ(cast1("e2m3", "0.125"), "0x01 0.125");   // 6 bits: 2 digits, smallest subnormal
  EXPECT_EQ(cast1("float16", "65504"), "0x7bff 65504");
  EXPECT_EQ(cast1("e4m3", "448"), "0x7e 448");
  EXPECT_EQ(cast1("e2m1", "2.9"), "0x5 3");
  EXPECT_EQ(cast1("e4m3", "-0"), "0x80 -0");
  EXPECT_EQ(cast1("e4m3fnuz", "-0"), "0x00 0");      // fnuz has no negative zero
  EXPECT_EQ(cast1("int8", "-3.5"), "0xfc -4");       // ties to even
  EXPECT_EQ(cast1("int8", "127.5"), "0x7f 127");     // integers saturate
  EXPECT_EQ(cast1("int8_sym", "-128"), "0x81 -127");
}

TEST(Cli, SurroundingWhitespaceAndCrlf) {
  const Result r = lowp_run({"cast", "--to", "e5m2"}, "  1000\t\r\n\t-1000 \n");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "0x64 1024\n0xe4 -1024\n");
}

TEST(Cli, HexFloatInput) {
  EXPECT_EQ(cast1("e5m2", "0x1.8p+3"), "0x4a 12");   // 12 = 1.5 * 2^3: E = 18, M = 0b10
  EXPECT_EQ(cast1("e4m3", "0x1.8p+3"), "0x54 12");   // E = 10, M = 0b100
  EXPECT_EQ(cast1("e4m3", "-0x1p-9"), "0x81 -0.001953125");  // smallest subnormal
  // 1 + 2^-68 needs more than 53 bits: still rounded directly, so toward +inf gives 1.125.
  EXPECT_EQ(cast1("e4m3", "0x1.00000000000000001p+0", {"--round", "up"}), "0x39 1.125");
  EXPECT_EQ(cast1("e4m3", "0x1.00000000000000001p+0"), "0x38 1");
}

TEST(Cli, NanAndInfinities) {
  struct Case {
    const char* format;
    const char* nan;
    const char* inf;
    const char* minus_inf;
  };
  const Case cases[] = {
      {"float8_e5m2", "0x7e nan", "0x7c inf", "0xfc -inf"},        // IEEE-style
      {"float8_e4m3fn", "0x7f nan", "0x7f nan", "0xff nan"},       // no Inf: Inf -> NaN of its sign
      {"float8_e4m3fnuz", "0x80 nan", "0x80 nan", "0x80 nan"},     // single NaN at 0x80
      {"binary8p3", "0x80 nan", "0x7f inf", "0xff -inf"},          // P3109
      {"bfloat16", "0x7fc0 nan", "0x7f80 inf", "0xff80 -inf"},
      {"float16", "0x7e00 nan", "0x7c00 inf", "0xfc00 -inf"},
      {"float4_e2m1fn", "0x8 -0", "0x7 6", "0xf -6"},              // all finite: NaN -> -0 (ml_dtypes), Inf -> max
      {"int8", "0x00 0", "0x7f 127", "0x80 -128"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.format);
    const Result r = lowp_run({"cast", "--to", c.format}, "nan\ninf\n-inf\n");
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, std::string(c.nan) + "\n" + c.inf + "\n" + c.minus_inf + "\n");
  }
}

TEST(Cli, EveryRoundingMode) {
  // e4m3 near 1: the step is 1/8. 1.0 = 0x38 (even code), 1.125 = 0x39 (odd), 1.25 = 0x3a.
  // 1.02 lies just above 1; 1.0625 is the tie between 1 and 1.125; 1.1875 the tie between
  // 1.125 and 1.25; 1.25 is exact.
  const std::string input = "1.02\n-1.02\n1.0625\n1.1875\n1.25\n";
  struct Case {
    const char* mode;
    const char* out;
  };
  const Case cases[] = {
      {"nearest", "0x38 1\n0xb8 -1\n0x38 1\n0x3a 1.25\n0x3a 1.25\n"},
      {"away", "0x38 1\n0xb8 -1\n0x39 1.125\n0x3a 1.25\n0x3a 1.25\n"},
      {"zero", "0x38 1\n0xb8 -1\n0x38 1\n0x39 1.125\n0x3a 1.25\n"},
      {"up", "0x39 1.125\n0xb8 -1\n0x39 1.125\n0x3a 1.25\n0x3a 1.25\n"},
      {"down", "0x38 1\n0xb9 -1.125\n0x38 1\n0x39 1.125\n0x3a 1.25\n"},
      {"odd", "0x39 1.125\n0xb9 -1.125\n0x39 1.125\n0x39 1.125\n0x3a 1.25\n"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.mode);
    const Result r = lowp_run({"cast", "--to", "e4m3", "--round", c.mode}, input);
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, c.out);
  }
  // Stochastic: each result is one of the two neighbours; exact values stay exact.
  const Result r = lowp_run({"cast", "--to", "e4m3", "--round", "stochastic"}, "1.02\n-1.02\n1.25\n");
  EXPECT_EQ(r.code, 0);
  std::istringstream lines(r.out);
  std::string a, b, c;
  std::getline(lines, a);
  std::getline(lines, b);
  std::getline(lines, c);
  EXPECT_TRUE(a == "0x38 1" || a == "0x39 1.125") << a;
  EXPECT_TRUE(b == "0xb8 -1" || b == "0xb9 -1.125") << b;
  EXPECT_EQ(c, "0x3a 1.25");
}

TEST(Cli, Saturate) {
  // e4m3: 1000 > 448 (max); the next step would be 480, so nearest overflows.
  EXPECT_EQ(cast1("e4m3", "1000"), "0x7f nan");
  EXPECT_EQ(cast1("e4m3", "1000", {"--saturate"}), "0x7e 448");
  EXPECT_EQ(cast1("e4m3", "-1000", {"--saturate"}), "0xfe -448");
  // e5m2: max 57344 = 1.75 * 2^15 = 0x7b.
  EXPECT_EQ(cast1("e5m2", "1e5"), "0x7c inf");
  EXPECT_EQ(cast1("e5m2", "1e5", {"--saturate"}), "0x7b 57344");
  EXPECT_EQ(cast1("e5m2", "-inf", {"--saturate"}), "0xfb -57344");
  EXPECT_EQ(cast1("e5m2", "nan", {"--saturate"}), "0x7e nan");
  // IEEE 754: toward zero, overflow gives the largest finite value even without --saturate.
  EXPECT_EQ(cast1("e5m2", "1e5", {"--round", "zero"}), "0x7b 57344");
}

TEST(Cli, FlushSubnormals) {
  EXPECT_EQ(cast1("e4m3", "0.001953125"), "0x01 0.001953125");  // 2^-9, the smallest subnormal
  EXPECT_EQ(cast1("e4m3", "0.001953125", {"--flush-subnormals"}), "0x00 0");
  EXPECT_EQ(cast1("e4m3", "-0.001953125", {"--flush-subnormals"}), "0x80 -0");
  EXPECT_EQ(cast1("e4m3", "0.015625", {"--flush-subnormals"}), "0x08 0.015625");  // 2^-6: normal
}

TEST(Cli, StochasticIsDeterministicPerSeedAndLine) {
  // 1.0625 is halfway between 1 (0x38) and 1.125 (0x39): the fraction dropped is 1/2, so line k
  // rounds up exactly when its 32 random bits, random_bits(rng_key(seed), k), are >= 2^31.
  constexpr int n = 256;
  std::string input;
  for (int i = 0; i < n; ++i) input += "1.0625\n";
  const std::vector<std::string> args = {"cast", "--to", "e4m3", "--round", "stochastic", "--seed", "7"};
  const Result r1 = lowp_run(args, input);
  const Result r2 = lowp_run(args, input);
  ASSERT_EQ(r1.code, 0);
  EXPECT_EQ(r1.out, r2.out);
  std::string expected;
  const lowp::RngKey key = lowp::rng_key(7);
  int ups = 0;
  for (int k = 0; k < n; ++k) {
    const bool up = lowp::random_bits(key, static_cast<std::uint64_t>(k)) >= 0x80000000u;
    ups += up ? 1 : 0;
    expected += up ? "0x39 1.125\n" : "0x38 1\n";
  }
  EXPECT_EQ(r1.out, expected);
  EXPECT_GT(ups, 0);
  EXPECT_LT(ups, n);
  // Another seed draws other bits (all 256 lines agreeing would have probability 2^-256).
  const Result r3 = lowp_run({"cast", "--to", "e4m3", "--round", "stochastic", "--seed", "8"}, input);
  EXPECT_NE(r1.out, r3.out);
}

TEST(Cli, DecimalInputIsNotDoubleRounded) {
  // Each input differs from a value binary64 holds by 1e-22, far below binary64's half-ulp
  // there (2^-53 ~ 1.1e-16), so parsing to the nearest binary64 would return that value and
  // the cast would then see a tie or an exact value. The exact decimal is on one side of it:
  // 1.0625 + 1e-22 is above the midpoint of 1 and 1.125 -> nearest must give 1.125, not 1 (even).
  EXPECT_EQ(cast1("e4m3", "1.0625000000000000000001"), "0x39 1.125");
  // 1.0625 - 1e-22 is below the midpoint -> ties-away must still give 1.
  EXPECT_EQ(cast1("e4m3", "1.0624999999999999999999", {"--round", "away"}), "0x38 1");
  // Just above 1 -> up gives 1.125; just below 1.125 -> toward zero gives 1.
  EXPECT_EQ(cast1("e4m3", "1.0000000000000000000001", {"--round", "up"}), "0x39 1.125");
  EXPECT_EQ(cast1("e4m3", "1.1249999999999999999999", {"--round", "zero"}), "0x38 1");
  EXPECT_EQ(cast1("e4m3", "-1.0000000000000000000001", {"--round", "down"}), "0xb9 -1.125");
  EXPECT_EQ(cast1("e4m3", "-1.0000000000000000000001", {"--round", "up"}), "0xb8 -1");
  // Just below 1: between 0.9375 (0x37, odd code) and 1 (0x38) -> round to odd gives 0x37.
  EXPECT_EQ(cast1("e4m3", "0.9999999999999999999999", {"--round", "odd"}), "0x37 0.9375");
  // Beyond binary64's range on both ends: 1e-400 is positive, 1e400 finite.
  EXPECT_EQ(cast1("e4m3", "1e-400", {"--round", "up"}), "0x01 0.001953125");
  EXPECT_EQ(cast1("e4m3", "1e-400"), "0x00 0");
  EXPECT_EQ(cast1("e4m3", "-1e-400", {"--round", "down"}), "0x81 -0.001953125");
  EXPECT_EQ(cast1("e4m3", "-1e-400"), "0x80 -0");
  EXPECT_EQ(cast1("e5m2", "1e400", {"--round", "zero"}), "0x7b 57344");
  EXPECT_EQ(cast1("e5m2", "1e400"), "0x7c inf");
}

TEST(Cli, DecodeEveryE2m1Code) {
  // OCP MX FP4 E2M1: magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 is the sign.
  const Result r = lowp_run({"decode", "--from", "float4_e2m1fn"},
                            "0x0\n1\n0x2\n3\n0x4\n5\n0x6\n7\n0x8\n9\n0xa\nB\n0Xc\nd\n0x0e\nf\n");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out,
            "0x0 0\n0x1 0.5\n0x2 1\n0x3 1.5\n0x4 2\n0x5 3\n0x6 4\n0x7 6\n"
            "0x8 -0\n0x9 -0.5\n0xa -1\n0xb -1.5\n0xc -2\n0xd -3\n0xe -4\n0xf -6\n");
  EXPECT_EQ(r.err, "");
}

TEST(Cli, DecodeOtherFormats) {
  const Result r = lowp_run({"decode", "--from", "e5m2"}, "0x64\n7c\n0xfc\n0x7d\n0x01\n");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "0x64 1024\n0x7c inf\n0xfc -inf\n0x7d nan\n0x01 1.52587890625e-05\n");
  EXPECT_EQ(lowp_run({"decode", "--from", "int8"}, "80\n").out, "0x80 -128\n");
  EXPECT_EQ(lowp_run({"decode", "--from", "e8m0"}, "7f\n0\n").out, "0x7f 1\n0x00 5.877471754111438e-39\n");
}

TEST(Cli, BadNumberStopsAtTheLine) {
  const Result r = lowp_run({"cast", "--to", "e4m3"}, "1\n2\n1.2.3\n4\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "0x38 1\n0x40 2\n");  // the lines before it, nothing after it
  expect_one_error_line(r, "lowp cast: line 3: cannot parse '1.2.3' as a number");
  for (const char* bad : {"1.5x", "abc", "0x", "1e", "--1", "1 2"}) {
    SCOPED_TRACE(bad);
    const Result b = lowp_run({"cast", "--to", "e4m3"}, std::string(bad) + "\n");
    EXPECT_EQ(b.code, 1);
    EXPECT_EQ(b.out, "");
    expect_one_error_line(b, "lowp cast: line 1: cannot parse '" + std::string(bad) + "' as a number");
  }
}

TEST(Cli, EmptyLineIsAnError) {
  for (const char* input : {"1\n\n2\n", "1\n \t\n2\n"}) {
    const Result r = lowp_run({"cast", "--to", "e4m3"}, input);
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.out, "0x38 1\n");
    expect_one_error_line(r, "lowp cast: line 2: empty line (every line must hold one value)");
  }
}

TEST(Cli, ControlBytesAreEscapedInErrors) {
  const Result r = lowp_run({"cast", "--to", "e4m3"}, std::string("1\x01", 2) + "\n");
  EXPECT_EQ(r.code, 1);
  expect_one_error_line(r, "lowp cast: line 1: cannot parse '1\\x01' as a number");
  const Result nul = lowp_run({"cast", "--to", "e4m3"}, std::string("1\0x\n", 4));
  EXPECT_EQ(nul.code, 1);
  expect_one_error_line(nul, "lowp cast: line 1: cannot parse '1\\x00x' as a number");
}

TEST(Cli, UnknownFormatListsTheValidNames) {
  for (const char* cmd : {"cast", "decode"}) {
    SCOPED_TRACE(cmd);
    const Result r = lowp_run({cmd, std::string(cmd) == "cast" ? "--to" : "--from", "nope"}, "1\n");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    ASSERT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
    EXPECT_EQ(r.err.rfind("lowp " + std::string(cmd) + ": unknown format 'nope'; valid names: ", 0), 0u) << r.err;
    for (const auto& p : lowp::presets()) EXPECT_NE(r.err.find(p.name), std::string::npos) << p.name;
  }
}

TEST(Cli, UsageErrors) {
  const Result round = lowp_run({"cast", "--to", "e4m3", "--round", "sideways"}, "1\n");
  EXPECT_EQ(round.code, 2);
  EXPECT_EQ(round.out, "");
  expect_one_error_line(
      round, "lowp cast: unknown rounding mode 'sideways'; valid modes: nearest, away, zero, up, down, odd, stochastic");
  const Result missing = lowp_run({"cast"}, "1\n");
  EXPECT_EQ(missing.code, 2);
  expect_one_error_line(missing, "lowp cast: --to is required");
  const Result seed = lowp_run({"cast", "--to", "e4m3", "--seed", "x"}, "1\n");
  EXPECT_EQ(seed.code, 2);
  EXPECT_EQ(seed.err.find('\n'), seed.err.size() - 1) << seed.err;
  const Result none = lowp_run({});
  EXPECT_EQ(none.code, 2);
  expect_one_error_line(none, "lowp: a command is required (formats, cast, decode, golden, eval, recipes, sweep, search, tokenize, train, probe, generate); run `lowp --help`");
  const Result unknown = lowp_run({"frobnicate"});
  EXPECT_EQ(unknown.code, 2);
  expect_one_error_line(unknown, "lowp: unknown command 'frobnicate'; valid commands: formats, cast, decode, golden, eval, recipes, sweep, search, tokenize, train, probe, generate");
  const Result option = lowp_run({"--frobnicate"});
  EXPECT_EQ(option.code, 2);
  expect_one_error_line(option, "lowp: unknown option '--frobnicate'; run `lowp --help`");
}

TEST(Cli, DecodeBadCodes) {
  const Result range = lowp_run({"decode", "--from", "e2m1"}, "0x7\n0x10\n0x1\n");
  EXPECT_EQ(range.code, 1);
  EXPECT_EQ(range.out, "0x7 6\n");
  expect_one_error_line(range, "lowp decode: line 2: code '0x10' is out of range for float4_e2m1fn (0x0..0xf)");
  const Result huge = lowp_run({"decode", "--from", "e5m2"}, "0x100000000000000000000\n");
  EXPECT_EQ(huge.code, 1);
  expect_one_error_line(huge,
                        "lowp decode: line 1: code '0x100000000000000000000' is out of range for float8_e5m2 (0x0..0xff)");
  const Result unused = lowp_run({"decode", "--from", "int8_sym"}, "0x7f\n0x80\n");
  EXPECT_EQ(unused.code, 1);
  EXPECT_EQ(unused.out, "0x7f 127\n");
  expect_one_error_line(unused, "lowp decode: line 2: code '0x80' is not a valid int8_sym code");
  for (const char* bad : {"0x", "xyz", "-1", "+1", "0x1g", "1 2", "0x0x1"}) {
    SCOPED_TRACE(bad);
    const Result b = lowp_run({"decode", "--from", "e5m2"}, std::string(bad) + "\n");
    EXPECT_EQ(b.code, 1);
    EXPECT_EQ(b.out, "");
    expect_one_error_line(b, "lowp decode: line 1: cannot parse '" + std::string(bad) + "' as a hex code");
  }
}

TEST(Cli, FormatsTable) {
  const Result r = lowp_run({"formats"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
  std::istringstream lines(r.out);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header.rfind("name ", 0), 0u) << header;
  for (const auto& p : lowp::presets()) {
    SCOPED_TRACE(p.name);
    std::string row_start = "\n";  // built piecewise: GCC 12 warns falsely on "\n" + string
    row_start += p.name;
    row_start += ' ';
    EXPECT_NE(r.out.find(row_start), std::string::npos);
    for (auto a : p.aliases) EXPECT_NE(r.out.find(a), std::string::npos) << a;
  }
  // Whole rows, read as whitespace-separated fields: values from the OCP FP8 spec.
  auto fields = [&](const std::string& name) {
    std::istringstream s(r.out);
    std::string line;
    while (std::getline(s, line))
      if (line.rfind(name + " ", 0) == 0) {
        std::istringstream f(line);
        std::vector<std::string> v;
        for (std::string w; f >> w && v.size() < 11;) v.push_back(w);
        return v;
      }
    return std::vector<std::string>{};
  };
  EXPECT_EQ(fields("float8_e5m2"),
            (std::vector<std::string>{"float8_e5m2", "e5m2,fp8_e5m2", "8", "5", "2", "15", "57344", "6.103515625e-05",
                                      "1.52587890625e-05", "0x7c,0xfc", "0x7d-0x7f,0xfd-0xff"}));
  EXPECT_EQ(fields("float8_e4m3fn"),
            (std::vector<std::string>{"float8_e4m3fn", "e4m3,fp8_e4m3", "8", "4", "3", "7", "448", "0.015625",
                                      "0.001953125", "none", "0x7f,0xff"}));
  EXPECT_EQ(fields("float4_e2m1fn"), (std::vector<std::string>{"float4_e2m1fn", "e2m1,fp4,fp4_e2m1", "4", "2", "1", "1",
                                                               "6", "1", "0.5", "none", "none"}));
  // Aligned: the right-aligned "bits" column ends at the same offset on every line of the table
  // (which ends at the blank line before the P3109 family).
  const std::size_t bits_end = header.find("bits") + 4;
  std::string line;
  while (std::getline(lines, line) && !line.empty()) {
    ASSERT_GT(line.size(), bits_end) << line;
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(line[bits_end - 1])) && line[bits_end] == ' ') << line;
  }
  // The P3109 family: two lines of explanation, a header, then one line per K (3..8),
  // signedness and domain, each naming its precision range and its NaN code.
  std::vector<std::string> family;
  while (std::getline(lines, line)) family.push_back(line);
  ASSERT_EQ(family.size(), 2u + 1u + 24u);
  EXPECT_EQ(family[2].rfind("names ", 0), 0u) << family[2];
  EXPECT_EQ(family[3].rfind("p3109_k3p{1..2}se ", 0), 0u) << family[3];
  EXPECT_EQ(family.back().rfind("p3109_k8p{1..8}uf ", 0), 0u) << family.back();
  // k8 unsigned finite: 8 exponent bits down to 1, bias 128..1, NaN 0xff and no Inf.
  std::istringstream last(family.back());
  std::vector<std::string> f;
  for (std::string w; last >> w;) f.push_back(w);
  EXPECT_EQ(f, (std::vector<std::string>{"p3109_k8p{1..8}uf", "8", "8..1", "0..7", "128..1",
                                         "8.507059173023462e+37..1.984375", "5.877471754111438e-39..0.0078125",
                                         "none", "0xff"}));
}

TEST(Cli, Help) {
  const Result top = lowp_run({"--help"});
  EXPECT_EQ(top.code, 0);
  EXPECT_EQ(top.err, "");
  for (const char* cmd : {"formats", "cast", "decode"}) EXPECT_NE(top.out.find(cmd), std::string::npos) << cmd;
  const Result cast = lowp_run({"cast", "--help"});
  EXPECT_EQ(cast.code, 0);
  for (const char* opt : {"--to", "--round", "--saturate", "--flush-subnormals", "--seed", "stochastic"})
    EXPECT_NE(cast.out.find(opt), std::string::npos) << opt;
  const Result decode = lowp_run({"decode", "--help"});
  EXPECT_EQ(decode.code, 0);
  EXPECT_NE(decode.out.find("--from"), std::string::npos);
}

}  // namespace
