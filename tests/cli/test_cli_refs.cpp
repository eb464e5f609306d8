// `lowp cast` and `lowp decode` (in-process) against peers' own output in ../shared/formats:
// ml_dtypes' codes for its 11 types and gfloat's codes for the 120 IEEE P3109 formats in five
// rounding modes, saturating or not. Inputs go in as C99 hex floats (the exact float32 value);
// the code is the first field of each output line. Skipped with a message without ../shared.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::test::lowp_run;
using lowp::test::Result;

const fs::path kFormats = fs::path(LOWP_SHARED_DIR) / "formats";

template <class T>
std::vector<T> read_vec(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

std::string as_lines(const std::vector<float>& x) {
  std::string s;
  char buf[64];
  for (float v : x) {
    if (std::isnan(v)) s += std::signbit(v) ? "-nan\n" : "nan\n";
    else if (std::isinf(v)) s += v < 0 ? "-inf\n" : "inf\n";
    else {
      std::snprintf(buf, sizeof buf, "%a\n", static_cast<double>(v));
      s += buf;
    }
  }
  return s;
}

// The codes of `lowp cast`'s output, one per line.
std::vector<std::uint32_t> codes_of(const std::string& out) {
  std::vector<std::uint32_t> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) v.push_back(static_cast<std::uint32_t>(std::strtoul(line.c_str(), nullptr, 16)));
  return v;
}

// Compares the codes of `lowp cast --to name args` with `want`; returns the mismatch count.
int check_cast(const std::string& name, const std::vector<std::string>& extra, const std::string& input,
               const std::vector<float>& x, const std::vector<std::uint8_t>& want, std::uint32_t mask) {
  std::vector<std::string> args = {"cast", "--to", name};
  args.insert(args.end(), extra.begin(), extra.end());
  const Result r = lowp_run(args, input);
  EXPECT_EQ(r.code, 0) << r.err;
  const auto got = codes_of(r.out);
  EXPECT_EQ(got.size(), want.size()) << name;
  int bad = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i)
    if ((got[i] & mask) != (want[i] & mask) && ++bad <= 3) {
      std::string what = name;
      for (const auto& e : extra) what += " " + e;
      ADD_FAILURE() << "lowp cast --to " << what << ": " << std::hexfloat << x[i] << " -> 0x" << std::hex << got[i]
                    << ", reference 0x" << static_cast<unsigned>(want[i]);
    }
  return bad;
}

// `lowp decode --from name` of every code: value (parsed back) equal, or both NaN.
template <class T>
void check_decode(const std::string& name, int bits, const std::vector<T>& want) {
  std::string in;
  char buf[32];
  for (int c = 0; c < (1 << bits); ++c) {
    std::snprintf(buf, sizeof buf, "0x%x\n", c);
    in += buf;
  }
  const Result r = lowp_run({"decode", "--from", name}, in);
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  for (std::size_t c = 0; c < want.size() && std::getline(lines, line); ++c) {
    const std::string value = line.substr(line.find(' ') + 1);
    if (std::isnan(want[c])) {
      EXPECT_EQ(value, "nan") << name << " code " << c;
    } else {
      const double v = std::strtod(value.c_str(), nullptr);
      EXPECT_TRUE(v == static_cast<double>(want[c]) && std::signbit(v) == std::signbit(want[c]))
          << name << " code " << c << ": " << value << ", reference " << want[c];
    }
  }
}

TEST(CliRefs, CastAndDecodeGiveMlDtypesCodes) {
  const fs::path dir = kFormats / "ml_dtypes";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "../shared is not available: " << dir << " missing";
  for (const char* name : {"float8_e3m4", "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
                           "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
                           "float4_e2m1fn"}) {
    const std::string n = name;
    const auto x = read_vec<float>(dir / (n + ".in.f32"));
    const auto want = read_vec<std::uint8_t>(dir / (n + ".codes"));
    const auto dec = read_vec<float>(dir / (n + ".decode.f32"));
    const int bits = dec.size() == 16 ? 4 : dec.size() == 64 ? 6 : 8;
    EXPECT_EQ(check_cast(n, {}, as_lines(x), x, want, (1u << bits) - 1), 0) << n;
    check_decode(n, bits, dec);
  }
}

TEST(CliRefs, CastAndDecodeGiveGfloatP3109Codes) {
  const fs::path dir = kFormats / "p3109";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "../shared is not available: " << dir << " missing";
  std::ifstream index(dir / "index.tsv");
  std::string line;
  std::getline(index, line);
  int formats = 0;
  while (std::getline(index, line)) {
    std::istringstream f(line);
    std::string name;
    int k = 0;
    f >> name >> k;
    ++formats;
    const auto x = read_vec<float>(dir / (name + ".in.f32"));
    const std::string input = as_lines(x);
    for (const char* mode : {"nearest", "zero", "up", "down", "away"})
      for (bool sat : {false, true}) {
        const std::string file = name + "." + mode + (sat ? ".sat" : "") + ".codes";
        std::vector<std::string> extra = {"--round", mode};
        if (sat) extra.push_back("--saturate");
        EXPECT_EQ(check_cast(name, extra, input, x, read_vec<std::uint8_t>(dir / file), (1u << k) - 1), 0) << file;
      }
    check_decode(name, k, read_vec<double>(dir / (name + ".decode.f64")));
  }
  EXPECT_EQ(formats, 120);
}

}  // namespace
