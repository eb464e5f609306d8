// The codec against peers' own output in ../shared/formats (read in place):
// - ml_dtypes/: what ml_dtypes' C++ code gives for 11 types (round to nearest even, not
//   saturating) for every input file, and its decode of every code;
// - p3109/: what graphcore-research/gfloat gives for the 120 IEEE P3109 formats: the value of
//   every code and the code of every input in five rounding modes, saturating or not.
// Every code is checked through the scalar codec and every bulk kernel this CPU runs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"

namespace lowp {
namespace {

namespace fs = std::filesystem;

fs::path shared_formats() { return fs::path(LOWP_SHARED_DIR) / "formats"; }

#define SKIP_WITHOUT(dir)                                                                     \
  if (!fs::is_directory(dir)) GTEST_SKIP() << "../shared is not available: " << (dir) << " missing " \
                                           << "(peer reference codes; see tests/formats/test_shared_refs.cpp)"

template <class T>
std::vector<T> read_vec(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

std::vector<Isa> isas() {
  std::vector<Isa> v = {Isa::scalar};
  for (Isa i : {Isa::avx2, Isa::avx512})
    if (isa_available(i)) v.push_back(i);
  return v;
}

// Codes one per byte from the bulk path (scalar reference kernel or SIMD).
std::vector<std::uint8_t> bulk_codes(const Format& f, const std::vector<float>& in, const CastOptions& o, Isa isa) {
  std::vector<std::uint8_t> out(in.size());
  BulkOptions bo;
  bo.cast = o;
  bo.isa = isa;
  bo.one_per_byte = true;
  encode_f32(f, in, out, bo);
  return out;
}

// Compares every input's code: scalar codec, then each bulk kernel. Returns the number of
// mismatches (the first few are reported).
int check_codes(const Format& f, const std::string& what, const std::vector<float>& in,
                const std::vector<std::uint8_t>& want, const CastOptions& o) {
  EXPECT_EQ(in.size(), want.size()) << what;
  int bad = 0;
  const std::uint32_t mask = f.code_mask();
  auto report = [&](const char* path, std::size_t i, std::uint32_t got) {
    if (++bad <= 5)
      ADD_FAILURE() << what << " [" << path << "] input " << i << " = " << std::hexfloat << in[i] << " (bits 0x"
                    << std::hex << std::bit_cast<std::uint32_t>(in[i]) << "): code 0x" << got << ", reference 0x"
                    << static_cast<unsigned>(want[i]) << std::dec;
  };
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint32_t got = encode(f, in[i], o) & mask;
    if (got != (want[i] & mask)) report("scalar codec", i, got);
  }
  for (Isa isa : isas()) {
    const auto codes = bulk_codes(f, in, o, isa);
    for (std::size_t i = 0; i < in.size(); ++i)
      if (codes[i] != (want[i] & mask)) report(isa_name(isa).data(), i, codes[i]);
  }
  return bad;
}

// Codes 0..2^bits-1 packed as bulk.hpp stores them.
std::vector<std::uint8_t> all_codes_packed(const Format& f) {
  const std::size_t n = std::size_t{1} << f.bits();
  std::vector<std::uint8_t> b(encoded_bytes(f, n), 0);
  const int sb = storage_bits(f);
  for (std::size_t c = 0; c < n; ++c) {
    if (sb == 8) b[c] = static_cast<std::uint8_t>(c);
    else if (sb == 4) b[c / 2] = static_cast<std::uint8_t>(b[c / 2] | c << (4 * (c % 2)));
    else {  // 6: four codes per little-endian 24-bit group
      const std::uint32_t w = static_cast<std::uint32_t>(c) << (6 * (c % 4));
      for (int k = 0; k < 3; ++k) b[c / 4 * 3 + k] = static_cast<std::uint8_t>(b[c / 4 * 3 + k] | w >> (8 * k));
    }
  }
  return b;
}

// Every code's decode, scalar and bulk, against the reference values: NaN codes must decode to
// NaN (with the reference's sign when `nan_sign` is set), the others to the same value and sign.
template <class T>
void check_decode(const Format& f, const std::string& what, const std::vector<T>& want, bool nan_sign) {
  const std::size_t n = std::size_t{1} << f.bits();
  ASSERT_EQ(want.size(), n) << what;
  auto same = [&](double got, T w) {
    if (std::isnan(w)) return std::isnan(got) && (!nan_sign || std::signbit(got) == std::signbit(w));
    return got == static_cast<double>(w) && std::signbit(got) == std::signbit(w);
  };
  for (std::size_t c = 0; c < n; ++c) {
    const double got = decode(f, static_cast<std::uint32_t>(c));
    EXPECT_TRUE(same(got, want[c])) << what << ": code 0x" << std::hex << c << std::dec << " decodes to " << got
                                    << ", reference " << want[c];
  }
  const auto packed = all_codes_packed(f);
  for (Isa isa : isas()) {
    std::vector<float> out(n);
    decode_f32(f, packed, out, isa);
    for (std::size_t c = 0; c < n; ++c)
      EXPECT_TRUE(same(out[c], want[c])) << what << " [" << isa_name(isa) << "]: code 0x" << std::hex << c
                                         << std::dec << " decodes to " << out[c] << ", reference " << want[c];
  }
}

const char* const kMlDtypes[] = {"float8_e3m4",        "float8_e4m3",   "float8_e4m3fn",   "float8_e4m3fnuz",
                                 "float8_e4m3b11fnuz", "float8_e5m2",   "float8_e5m2fnuz", "float8_e8m0fnu",
                                 "float6_e2m3fn",      "float6_e3m2fn", "float4_e2m1fn"};

TEST(SharedMlDtypes, EveryInputAndCodeOfAll11Types) {
  const fs::path dir = shared_formats() / "ml_dtypes";
  SKIP_WITHOUT(dir);
  for (const char* name : kMlDtypes) {
    SCOPED_TRACE(name);
    const Format f = parse_format(name);
    const auto in = read_vec<float>(dir / (std::string(name) + ".in.f32"));
    const auto want = read_vec<std::uint8_t>(dir / (std::string(name) + ".codes"));
    ASSERT_GT(in.size(), 40000u) << name;
    EXPECT_EQ(check_codes(f, name, in, want, CastOptions{}), 0) << name;
    check_decode(f, name, read_vec<float>(dir / (std::string(name) + ".decode.f32")), true);
  }
}

// The ties and float32 subnormals in which ml_dtypes' E8M0 differs from a correctly rounded
// one, pinned by value (from ml_dtypes' definition: the implicit 1 is the last kept bit).
TEST(SharedMlDtypes, E8m0TiesRoundUpAndRneKeepsEvenExponent) {
  const Format ml = parse_format("float8_e8m0fnu"), rne = parse_format("e8m0-rne");
  EXPECT_EQ(decode(ml, encode(ml, 3.0f)), 4.0);
  EXPECT_EQ(decode(ml, encode(ml, 0.75f)), 1.0);
  EXPECT_EQ(decode(ml, encode(ml, 1.4999999f)), 1.0);
  EXPECT_EQ(decode(rne, encode(rne, 3.0f)), 2.0);
  EXPECT_EQ(decode(rne, encode(rne, 0.75f)), 0.5);  // 2^-1 is code 126, 2^0 code 127: even is 0.5
  EXPECT_EQ(decode(rne, encode(rne, 6.0f)), 8.0);   // 2^2 is code 129, 2^3 code 130: even is 8
  EXPECT_EQ(decode(ml, encode(ml, 6.0f)), 8.0);
  const float tiny = std::ldexp(1.0f, -127) * 1.25f;  // float32 subnormal above 2^-127
  EXPECT_EQ(decode(ml, encode(ml, tiny)), std::ldexp(1.0, -126));
  EXPECT_EQ(decode(rne, encode(rne, tiny)), std::ldexp(1.0, -127));
  EXPECT_EQ(encode(ml, std::ldexp(1.0f, -127)), 0u);
  EXPECT_EQ(format_name(rne), "float8_e8m0fnu_rne");
  EXPECT_EQ(format_name(ml), "float8_e8m0fnu");
  // The shared file tells the two apart: e8m0-rne differs from ml_dtypes exactly on ties
  // 1.5 * 2^k whose lower neighbour has an even code, and on float32 subnormals just above 2^-127.
  const fs::path dir = shared_formats() / "ml_dtypes";
  SKIP_WITHOUT(dir);
  const auto in = read_vec<float>(dir / "float8_e8m0fnu.in.f32");
  const auto want = read_vec<std::uint8_t>(dir / "float8_e8m0fnu.codes");
  int differ = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (encode(rne, in[i]) == want[i]) continue;
    ++differ;
    const std::uint32_t b = std::bit_cast<std::uint32_t>(in[i]);
    const bool tie = (b & 0x7fffff) == 0x400000 && ((b >> 23) & 1) == 0 && (b >> 23) != 0;
    const bool sub = b > 0x400000 && b <= 0x600000;  // (2^-127, 1.5 * 2^-127]: 2^-126 in ml_dtypes
    EXPECT_TRUE(tie || sub) << std::hexfloat << in[i];
  }
  EXPECT_GT(differ, 50);
}

struct P3109Entry {
  std::string name;
  int k = 0, p = 0;
  bool is_signed = true, extended = true;
  double max = 0;
};

std::vector<P3109Entry> read_index(const fs::path& dir) {
  std::ifstream in(dir / "index.tsv");
  std::string line;
  std::getline(in, line);  // header: name K P signedness domain inputs max
  std::vector<P3109Entry> v;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    P3109Entry e;
    std::string sg, dom, inputs;
    ss >> e.name >> e.k >> e.p >> sg >> dom >> inputs >> e.max;
    e.is_signed = sg == "s";
    e.extended = dom == "e";
    v.push_back(e);
  }
  return v;
}

TEST(SharedP3109, EveryFormatDecodeAndFiveModesSaturatingOrNot) {
  const fs::path dir = shared_formats() / "p3109";
  SKIP_WITHOUT(dir);
  const auto index = read_index(dir);
  ASSERT_EQ(index.size(), 120u);
  const std::pair<const char*, Round> modes[] = {{"nearest", Round::nearest_even},
                                                 {"zero", Round::toward_zero},
                                                 {"up", Round::toward_pos},
                                                 {"down", Round::toward_neg},
                                                 {"away", Round::nearest_away}};
  for (const auto& e : index) {
    SCOPED_TRACE(e.name);
    const Format f = parse_format(e.name);
    EXPECT_EQ(f.bits(), e.k);
    EXPECT_EQ(f.man_bits + 1, e.p);
    EXPECT_EQ(f.is_signed, e.is_signed);
    EXPECT_EQ(f.has_inf(), e.extended);
    EXPECT_EQ(f.max_finite(), e.max);
    EXPECT_EQ(parse_format(format_name(f)), f) << format_name(f);
    check_decode(f, e.name, read_vec<double>(dir / (e.name + ".decode.f64")), false);
    const auto in = read_vec<float>(dir / (e.name + ".in.f32"));
    for (const auto& [mode, round] : modes)
      for (bool sat : {false, true}) {
        const std::string file = e.name + "." + mode + (sat ? ".sat" : "") + ".codes";
        CastOptions o;
        o.round = round;
        o.saturate = sat;
        EXPECT_EQ(check_codes(f, file, in, read_vec<std::uint8_t>(dir / file), o), 0) << file;
      }
  }
}

}  // namespace
}  // namespace lowp
