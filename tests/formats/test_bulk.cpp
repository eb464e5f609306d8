// Bulk casts: every SIMD kernel equals the scalar reference (per element: the scalar codec)
// bitwise, the packed layout matches hand-written bytes, CastReport counts, errors, and
// stochastic rounding is independent of chunking and thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bulk_patterns.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"

namespace lowp {
namespace {

using bulk_patterns::code_at;

std::vector<Isa> simd_isas() {
  std::vector<Isa> v;
  for (Isa i : {Isa::avx2, Isa::avx512})
    if (isa_available(i)) v.push_back(i);
  return v;
}

constexpr Round kModes[] = {Round::nearest_even, Round::nearest_away, Round::toward_zero, Round::toward_pos,
                            Round::toward_neg,   Round::stochastic,   Round::odd};

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

std::string hex(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

// Special values, every value of the format (or a sample of them) with its neighbours, the
// ties between consecutive values with their neighbours, and random patterns: half uniformly
// random bits, half log-uniform over (and a little beyond) the format's range.
std::vector<float> inputs(const Format& f, std::size_t n_random, std::uint64_t seed) {
  std::vector<float> v;
  for (std::uint32_t b : {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
                          0x7f800001u, 0xff800001u, 0x7fa00000u, 0x7fffffffu, 0xffffffffu, 0x00000001u,
                          0x80000001u, 0x007fffffu, 0x807fffffu, 0x00800000u, 0x80800000u, 0x7f7fffffu,
                          0xff7fffffu, 0x3f800000u, 0xbf800000u})
    v.push_back(from_bits(b));
  std::mt19937_64 rng(seed);
  const int nb = f.bits();
  std::vector<std::uint32_t> codes;
  if (nb <= 8) {
    for (std::uint32_t c = 0; c < (1u << nb); ++c) codes.push_back(c);
  } else {
    for (int k = 0; k < 4096; ++k) codes.push_back(static_cast<std::uint32_t>(rng()) & f.code_mask());
    codes.push_back(f.max_finite_code());
    codes.push_back(f.max_finite_code() | f.sign_bit());
    for (std::uint32_t c = 0; c < 64; ++c) codes.push_back(c);  // zero and the smallest values
  }
  std::set<double> vals;
  for (auto c : codes) {
    const double d = decode(f, c);
    if (std::isfinite(d)) vals.insert(d);
  }
  auto near = [&](double d) {
    const float x = static_cast<float>(d);
    if (static_cast<double>(x) != d) return;  // not a float32 (tie of a 16+ bit format): skip
    v.push_back(x);
    v.push_back(std::nextafter(x, INFINITY));
    v.push_back(std::nextafter(x, -INFINITY));
  };
  double prev = std::numeric_limits<double>::quiet_NaN();
  for (double d : vals) {
    near(d);
    if (!std::isnan(prev)) near((prev + d) / 2);
    prev = d;
  }
  if (!vals.empty()) {  // past the largest value: the overflow boundary, and far beyond
    const double mx = *vals.rbegin(), mn = *vals.begin();
    near(mx * 1.5);
    near(mx * 1.25);
    near(mx * 4);
    near(mn * 1.5);
    near(mn * 4);
  }
  const double lo = std::log2(std::max(f.min_subnormal(), 1e-45)) - 4;
  const double hi = std::log2(std::min(f.max_finite(), 3e38)) + 2;
  std::uniform_real_distribution<double> ue(lo, hi);
  for (std::size_t k = 0; k < n_random; ++k) {
    if (k % 2) {
      v.push_back(from_bits(static_cast<std::uint32_t>(rng())));
    } else {
      const float x = static_cast<float>(std::exp2(ue(rng)));
      v.push_back(rng() & 1 ? -x : x);
    }
  }
  return v;
}

// Every preset, and generic formats that reach the kernels' other branches: biases that move
// float32 subnormals into the normal range or overflow the exponent, no subnormals, no sign,
// no mantissa bits, and wide mantissas.
std::vector<Format> test_formats() {
  std::vector<Format> v;
  for (const auto& p : presets()) v.push_back(p.format);
  for (const char* g : {"e3m0", "e2m0fin", "e1m2", "ue4m3", "ue5m2", "e5m2_b130", "e4m3fn_b200", "e3m2_b-20",
                        "e8m3_b300", "e6m9", "e5m23", "e8m7_b100", "e4m3_b126", "ue8m0fnu",
                        // ml_dtypes' ties in a narrower E8M0, and P3109 layouts (unsigned: NaN all ones)
                        "e7m0fnu_b40", "e6m0fnu_rne_b10", "p3109_k8p3ue", "p3109_k8p1ue", "p3109_k6p3se",
                        "p3109_k5p2uf", "p3109_k3p1se", "p3109_k8p7sf", "p3109_k4p4ue"})
    v.push_back(parse_format(g));
  v.push_back(minifloat(4, 3, Specials::fn, true, 7, false));     // signed, no subnormals
  v.push_back(minifloat(8, 3, Specials::fn, true, 390));          // every float32 overflows
  v.push_back(minifloat(8, 2, Specials::finite, true, -150));     // every float32 is tiny
  v.push_back(minifloat(7, 0, Specials::fn, false, 40, false));   // E8M0-like, narrower
  return v;
}

std::vector<std::uint8_t> encode_with(const Format& f, std::span<const float> in, BulkOptions o, Isa isa,
                                      CastReport* rep = nullptr) {
  std::vector<std::uint8_t> out(encoded_bytes(f, in.size()) + 1, 0xA5);  // +1: a guard byte
  o.isa = isa;
  const CastReport r = encode_f32(f, in, std::span(out.data(), out.size() - 1), o);
  EXPECT_EQ(out.back(), 0xA5) << "wrote past the end";
  out.pop_back();
  if (rep) *rep = r;
  return out;
}

// Compares SIMD and scalar output; reports the first differing element.
void expect_same_codes(const Format& f, std::span<const float> in, const std::vector<std::uint8_t>& ref,
                       const std::vector<std::uint8_t>& got, const std::string& what) {
  if (ref == got) return;
  const int sb = storage_bits(f);
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (code_at(ref, i, sb) != code_at(got, i, sb)) {
      ADD_FAILURE() << what << ": input " << hex(bits_of(in[i])) << " (" << in[i] << ") at " << i << " of "
                    << in.size() << ": scalar " << hex(code_at(ref, i, sb)) << ", simd " << hex(code_at(got, i, sb));
      return;
    }
  }
  ADD_FAILURE() << what << ": padding bits differ";
}

std::string label(const Format& f, const BulkOptions& o, Isa isa) {
  return format_name(f) + " " + std::string(round_name(o.cast.round)) + (o.cast.saturate ? " sat" : "") +
         (o.cast.flush_subnormals ? " ftz" : "") + " " + std::string(isa_name(isa));
}

TEST(Bulk, StorageLayout) {
  EXPECT_EQ(storage_bits(parse_format("e2m1")), 4);
  EXPECT_EQ(storage_bits(parse_format("int4")), 4);
  EXPECT_EQ(storage_bits(parse_format("e2m3")), 6);
  EXPECT_EQ(storage_bits(parse_format("e4m3")), 8);
  EXPECT_EQ(storage_bits(parse_format("bf16")), 16);
  EXPECT_EQ(storage_bits(parse_format("tf32")), 32);
  EXPECT_EQ(encoded_bytes(parse_format("e2m1"), 5), 3u);
  EXPECT_EQ(encoded_bytes(parse_format("e2m3"), 5), 6u);
  EXPECT_EQ(encoded_bytes(parse_format("e2m3"), 4), 3u);
  EXPECT_EQ(encoded_bytes(parse_format("bf16"), 3), 6u);
}

// Every SIMD encode equals the scalar reference, for every small preset, mode, saturate and
// flush setting, on special values, all ties and random patterns, at several lengths.
TEST(Bulk, EncodeSimdEqualsScalar) {
  const auto isas = simd_isas();
  if (isas.empty()) GTEST_SKIP() << "no SIMD instruction set on this CPU";
  for (const Format& f : test_formats()) {
    const auto in = inputs(f, 20000, 7);
    for (Round r : kModes)
      for (int sat = 0; sat < 2; ++sat)
        for (int ftz = 0; ftz < 2; ++ftz) {
          BulkOptions o;
          o.cast = {r, sat != 0, ftz != 0};
          o.seed = 1234;
          o.offset = 99;
          CastReport rref;
          const auto ref = encode_with(f, in, o, Isa::scalar, &rref);
          for (Isa isa : isas) {
            CastReport rs;
            const auto got = encode_with(f, in, o, isa, &rs);
            expect_same_codes(f, in, ref, got, label(f, o, isa));
            EXPECT_EQ(rs.nan_inputs, rref.nan_inputs) << label(f, o, isa);
            EXPECT_EQ(rs.inf_inputs, rref.inf_inputs) << label(f, o, isa);
          }
        }
  }
}

// Lengths around the vector widths, with the input starting at odd offsets.
TEST(Bulk, EncodeLengths) {
  const auto isas = simd_isas();
  if (isas.empty()) GTEST_SKIP() << "no SIMD instruction set on this CPU";
  for (const char* name : {"e2m1", "e2m3", "e4m3", "e5m2", "bf16", "fp16", "e8m0", "tf32"}) {
    const Format f = parse_format(name);
    const auto all = inputs(f, 4000, 11);
    for (std::size_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 1023, 1025}) {
      for (std::size_t start : {0, 1, 3}) {
        const std::span<const float> in(all.data() + start, n);
        for (Round r : {Round::nearest_even, Round::stochastic}) {
          BulkOptions o;
          o.cast.round = r;
          o.seed = 5;
          const auto ref = encode_with(f, in, o, Isa::scalar);
          std::vector<float> fq_ref(in.begin(), in.end());
          fake_quant_f32(f, fq_ref, BulkOptions{.cast = o.cast, .seed = o.seed, .isa = Isa::scalar});
          for (Isa isa : isas) {
            const std::string what = label(f, o, isa) + " n=" + std::to_string(n);
            expect_same_codes(f, in, ref, encode_with(f, in, o, isa), what);
            std::vector<float> buf(n + 1, 777.0f);  // a guard element past the end
            std::copy(in.begin(), in.end(), buf.begin());
            fake_quant_f32(f, std::span(buf.data(), n), BulkOptions{.cast = o.cast, .seed = o.seed, .isa = isa});
            EXPECT_EQ(buf.back(), 777.0f) << what;
            for (std::size_t i = 0; i < n; ++i)
              EXPECT_EQ(bits_of(buf[i]), bits_of(fq_ref[i])) << what << " fake-quant element " << i;
          }
        }
      }
    }
  }
}

// one_per_byte: the codes of the packed layout, one a byte, from every kernel; nothing is
// written past n bytes, and a format of 8 bits or more ignores the option.
TEST(Bulk, OnePerByteIsThePackedCodesUnpacked) {
  std::vector<Isa> isas = simd_isas();
  isas.push_back(Isa::scalar);
  for (const char* name : {"e2m1", "e2m3", "e3m2", "int4", "uint4", "e4m3"}) {
    const Format f = parse_format(name);
    const int sb = storage_bits(f);
    const auto all = inputs(f, 3000, 13);
    for (std::size_t n : {0, 1, 3, 5, 15, 16, 17, 33, 65, 1025})
      for (Round r : {Round::nearest_even, Round::stochastic}) {
        const std::span<const float> in(all.data() + 1, n);
        BulkOptions o;
        o.cast.round = r;
        o.seed = 9;
        o.offset = 4;
        const auto packed = encode_with(f, in, o, Isa::scalar);
        for (Isa isa : isas) {
          BulkOptions ob = o;
          ob.isa = isa;
          ob.one_per_byte = true;
          std::vector<std::uint8_t> bytes(n + 1, 0xa5);  // a guard byte past the end
          encode_f32(f, in, std::span(bytes.data(), sb < 8 ? n : encoded_bytes(f, n)), ob);
          const std::string what = label(f, o, isa) + " n=" + std::to_string(n);
          if (sb < 8) {
            EXPECT_EQ(bytes[n], 0xa5) << what;
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(bytes[i], code_at(packed, i, sb)) << what << " element " << i;
          } else {
            EXPECT_TRUE(std::equal(packed.begin(), packed.end(), bytes.begin())) << what;
          }
        }
      }
  }
}

// Decoding every code (formats of up to 20 bits; a sample of wider ones) equals the scalar reference.
TEST(Bulk, DecodeSimdEqualsScalarOnEveryCode) {
  const auto isas = simd_isas();
  if (isas.empty()) GTEST_SKIP() << "no SIMD instruction set on this CPU";
  std::mt19937 rng(9);
  for (const Format& f : test_formats()) {
    const bool every = f.bits() <= 20;
    const std::size_t ncodes = every ? std::size_t{1} << f.bits() : 1u << 16;
    std::vector<std::uint32_t> codes(ncodes);
    for (std::size_t i = 0; i < ncodes; ++i) codes[i] = every ? static_cast<std::uint32_t>(i) : static_cast<std::uint32_t>(rng()) & f.code_mask();
    for (std::size_t n : {ncodes, ncodes + 3, std::size_t{1}, std::size_t{17}}) {
      std::vector<std::uint8_t> packed(encoded_bytes(f, n), 0);
      // Element i holds codes[i mod ncodes], stored with the documented layout.
      const int sb = storage_bits(f);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t c = codes[i % ncodes];
        switch (sb) {
          case 4: packed[i / 2] |= static_cast<std::uint8_t>(c << (4 * (i % 2))); break;
          case 6: {
            const std::uint32_t w = c << (6 * (i % 4));
            for (int k = 0; k < 3; ++k) packed[i / 4 * 3 + k] |= static_cast<std::uint8_t>(w >> (8 * k));
            break;
          }
          default:
            for (int k = 0; k < sb / 8; ++k) packed[sb / 8 * i + k] = static_cast<std::uint8_t>(c >> (8 * k));
            break;
        }
      }
      std::vector<float> ref(n), got(n + 1);
      decode_f32(f, packed, ref, Isa::scalar);
      for (std::size_t i = 0; i < n; ++i)  // the reference is decode() itself
        ASSERT_EQ(bits_of(ref[i]), bits_of(static_cast<float>(decode(f, codes[i % ncodes])))) << format_name(f);
      for (Isa isa : isas) {
        got.back() = 12345.0f;  // guard
        decode_f32(f, packed, std::span(got.data(), n), isa);
        EXPECT_EQ(got.back(), 12345.0f) << "wrote past the end";
        for (std::size_t i = 0; i < n; ++i)
          if (bits_of(ref[i]) != bits_of(got[i])) {
            ADD_FAILURE() << format_name(f) << " " << isa_name(isa) << ": code " << hex(codes[i % ncodes])
                          << " scalar " << hex(bits_of(ref[i])) << " simd " << hex(bits_of(got[i]));
            break;
          }
      }
    }
  }
}

// Fake-quant equals decode(encode(x)) as float32, bitwise, for every ISA.
TEST(Bulk, FakeQuantIsDecodeOfEncode) {
  for (const Format& f : test_formats()) {
    const auto in = inputs(f, 6000, 3);
    for (Round r : kModes)
      for (int sat = 0; sat < 2; ++sat) {
        BulkOptions o;
        o.cast = {r, sat != 0, sat != 0};  // flush together with saturate: a subset
        o.seed = 77;
        o.offset = 1u << 20;
        const RngKey key = rng_key(o.seed);
        std::vector<std::uint32_t> want(in.size());
        for (std::size_t i = 0; i < in.size(); ++i) {
          const std::uint32_t rb = r == Round::stochastic ? random_bits(key, o.offset + i) : 0;
          want[i] = bits_of(static_cast<float>(decode(f, encode(f, in[i], o.cast, rb))));
        }
        std::vector<Isa> isas = simd_isas();
        isas.push_back(Isa::scalar);
        for (Isa isa : isas) {
          std::vector<float> x = in;
          o.isa = isa;
          const CastReport rep = fake_quant_f32(f, x, o);
          for (std::size_t i = 0; i < x.size(); ++i)
            if (bits_of(x[i]) != want[i]) {
              ADD_FAILURE() << label(f, o, isa) << ": input " << hex(bits_of(in[i])) << " want " << hex(want[i])
                            << " got " << hex(bits_of(x[i]));
              break;
            }
          std::size_t nans = 0, infs = 0;
          for (float v : in) {
            nans += std::isnan(v);
            infs += std::isinf(v);
          }
          EXPECT_EQ(rep.nan_inputs, nans) << label(f, o, isa);
          EXPECT_EQ(rep.inf_inputs, infs) << label(f, o, isa);
        }
      }
  }
}

std::vector<Isa> all_isas() {
  std::vector<Isa> v{Isa::scalar};
  for (Isa i : simd_isas()) v.push_back(i);
  return v;
}

// Hand-written layout: e2m1 packs element 2i in the low nibble, e2m3 packs four codes into a
// little-endian 24-bit group with element 4i in the low six bits; partial bytes/groups pad with 0.
TEST(Bulk, PackedLayoutE2m1) {
  const Format f = parse_format("e2m1");
  const std::vector<float> in{1.0f, -6.0f, 0.5f, 3.0f, 4.0f};  // codes 2, F, 1, 5, 6
  const std::vector<std::uint8_t> want{0xF2, 0x51, 0x06};
  for (Isa isa : all_isas()) {
    EXPECT_EQ(encode_with(f, in, {}, isa), want) << isa_name(isa);
    std::vector<float> back(in.size());
    decode_f32(f, want, back, isa);
    EXPECT_EQ(back, in) << isa_name(isa);
  }
}

TEST(Bulk, PackedLayoutE2m3) {
  const Format f = parse_format("e2m3");
  const std::vector<float> in{1.0f, 7.5f, -1.0f, 0.125f, 2.0f};  // codes 8, 31, 40, 1, 16
  const std::vector<std::uint8_t> want{0xC8, 0x87, 0x06, 0x10, 0x00, 0x00};
  for (Isa isa : all_isas()) {
    EXPECT_EQ(encode_with(f, in, {}, isa), want) << isa_name(isa);
    std::vector<float> back(in.size());
    decode_f32(f, want, back, isa);
    EXPECT_EQ(back, in) << isa_name(isa);
  }
}

TEST(Bulk, LayoutOfWiderCodes) {
  const std::vector<float> in{1.0f, -2.0f, 448.0f};
  for (Isa isa : all_isas()) {
    EXPECT_EQ(encode_with(parse_format("e4m3"), in, {}, isa), (std::vector<std::uint8_t>{0x38, 0xC0, 0x7E}));
    EXPECT_EQ(encode_with(parse_format("bf16"), in, {}, isa),  // host order (little-endian here)
              (std::vector<std::uint8_t>{0x80, 0x3F, 0x00, 0xC0, 0xE0, 0x43}));
  }
}

// NaN and Inf inputs are counted; formats without NaN encode NaN as ml_dtypes does (+NaN the
// code of -0, -NaN +0), without Inf saturate; NaN and overflow keep their sign.
TEST(Bulk, CastReportCounts) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> in(37, 1.0f);
  in[0] = nan;
  in[5] = -inf;
  in[16] = -nan;
  in[20] = inf;
  in[33] = nan;  // in the tail of every vector width
  in[36] = inf;
  for (Isa isa : all_isas()) {
    CastReport rep;
    const auto codes = encode_with(parse_format("e2m1"), in, {}, isa, &rep);
    EXPECT_EQ(rep.nan_inputs, 3u) << isa_name(isa);
    EXPECT_EQ(rep.inf_inputs, 3u) << isa_name(isa);
    EXPECT_EQ(codes[0] & 0xF, 0x8) << "NaN -> the code of -0";
    EXPECT_EQ(codes[8] & 0xF, 0x0) << "-NaN -> +0";
    EXPECT_EQ(codes[2] >> 4, 0xF) << "-Inf -> -6";
    EXPECT_EQ(codes[10] & 0xF, 0x7) << "+Inf -> +6";
    const auto e4 = encode_with(parse_format("e4m3"), in, {}, isa, &rep);
    EXPECT_EQ(rep.nan_inputs, 3u);
    EXPECT_EQ(e4[5], 0xFF) << "-Inf -> -NaN in a format without Inf";
    EXPECT_EQ(e4[16], 0xFF) << "-NaN keeps its sign";
    EXPECT_EQ(e4[0], 0x7F);
    const auto e5 = encode_with(parse_format("e5m2"), in, {}, isa, &rep);
    EXPECT_EQ(e5[5], 0xFC);
    EXPECT_EQ(e5[20], 0x7C);
    EXPECT_EQ(e5[16], 0xFE);
    EXPECT_EQ(e5[33], 0x7E);
    std::vector<float> x = in;
    const CastReport fq = fake_quant_f32(parse_format("e4m3"), x, BulkOptions{.isa = isa});
    EXPECT_EQ(fq.nan_inputs, 3u);
    EXPECT_EQ(fq.inf_inputs, 3u);
  }
}

TEST(Bulk, Errors) {
  const Format f = parse_format("e2m1");
  std::vector<float> in(9, 1.0f);
  std::vector<std::uint8_t> small(4);  // 9 values need 5 bytes
  EXPECT_THROW(encode_f32(f, in, small), Error);
  try {
    encode_f32(f, in, small);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(decode_f32(f, small, in), Error);
  EXPECT_NO_THROW(decode_f32(f, std::span(small.data(), 4), std::span(in.data(), 8)));
  for (Isa isa : {Isa::avx2, Isa::avx512})
    if (!isa_available(isa)) {
      std::vector<std::uint8_t> out(5);
      EXPECT_THROW(encode_f32(f, in, out, BulkOptions{.isa = isa}), Error);
      EXPECT_THROW(decode_f32(f, out, in, isa), Error);
      EXPECT_THROW(fake_quant_f32(f, in, BulkOptions{.isa = isa}), Error);
    }
  Format bad = f;
  bad.exp_bits = 9;
  std::vector<std::uint8_t> out(16);
  EXPECT_THROW(encode_f32(bad, in, out), Error);
}

// A stride: element i rounds with random_bits(key, offset + i * stride), as the element it is in a
// transpose's stream; on every ISA, for encode and fake-quant, through the strides and offsets
// at which the counter's low word wraps inside a vector (the kernels' slow path).
TEST(Bulk, StochasticStrideDrawsTheTransposesBits) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> in(1037);
  for (auto& v : in) v = nd(rng);
  const std::uint64_t wrap = std::uint64_t{1} << 32;
  const std::pair<std::uint64_t, std::uint64_t> cases[] = {
      {0, 1}, {5, 3}, {17, 1024}, {wrap - 3000, 7}, {wrap + 11, 100000}, {3, (std::uint64_t{1} << 31) + 5}};
  for (const char* name : {"e2m1", "e4m3", "bf16"}) {
    const Format f = parse_format(name);
    for (const auto& [offset, stride] : cases) {
      BulkOptions o;
      o.cast.round = Round::stochastic;
      o.seed = 31;
      o.offset = offset;
      o.stride = stride;
      const RngKey key = rng_key(o.seed);
      std::vector<std::uint32_t> want(in.size());
      for (std::size_t i = 0; i < in.size(); ++i)
        want[i] = bits_of(static_cast<float>(decode(f, encode(f, in[i], o.cast, random_bits(key, offset + i * stride)))));
      for (Isa isa : all_isas()) {
        const std::string what = std::string(name) + " " + std::string(isa_name(isa)) + " offset " + std::to_string(offset) +
                                 " stride " + std::to_string(stride);
        o.isa = isa;
        std::vector<float> x = in;
        fake_quant_f32(f, x, o);
        const auto codes = encode_with(f, in, o, isa);
        std::vector<float> dec(in.size());
        decode_f32(f, codes, dec, Isa::scalar);
        for (std::size_t i = 0; i < in.size(); ++i) {
          ASSERT_EQ(bits_of(x[i]), want[i]) << what << " fake-quant element " << i;
          ASSERT_EQ(bits_of(dec[i]), want[i]) << what << " encode element " << i;
        }
      }
    }
  }
}

// Stochastic rounding: a cast in chunks (offset = first index) equals one call, serial or in
// parallel with 1 and 2 OpenMP threads, on every ISA.
TEST(Bulk, StochasticChunkingAndThreads) {
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> in(100003);
  for (auto& v : in) v = nd(rng);
  for (const char* name : {"e2m1", "e2m3", "e4m3", "bf16"}) {
    const Format f = parse_format(name);
    BulkOptions o;
    o.cast.round = Round::stochastic;
    o.seed = 2024;
    o.offset = (std::uint64_t{1} << 32) - 1000;  // the counter's low word wraps inside the array
    const auto one = encode_with(f, in, o, Isa::scalar);
    for (Isa isa : all_isas()) {
      EXPECT_EQ(encode_with(f, in, o, isa), one) << name << " " << isa_name(isa);
      for (int threads : {1, 2}) {
        std::vector<std::uint8_t> out(encoded_bytes(f, in.size()));
        constexpr std::size_t chunk = 4 * 1237;  // a multiple of 4 keeps packed chunks byte-aligned
        const auto nchunks = static_cast<long>((in.size() + chunk - 1) / chunk);
#pragma omp parallel for num_threads(threads) schedule(dynamic)
        for (long c = 0; c < nchunks; ++c) {
          const std::size_t b = static_cast<std::size_t>(c) * chunk, e = std::min(in.size(), b + chunk);
          BulkOptions oc = o;
          oc.offset = o.offset + b;
          oc.isa = isa;
          const std::size_t ob = encoded_bytes(f, b);
          encode_f32(f, std::span(in.data() + b, e - b), std::span(out.data() + ob, out.size() - ob), oc);
        }
        EXPECT_EQ(out, one) << name << " " << isa_name(isa) << " threads=" << threads;
      }
      // A different seed changes the codes.
      BulkOptions o2 = o;
      o2.seed = 2025;
      EXPECT_NE(encode_with(f, in, o2, isa), one);
    }
  }
}

}  // namespace
}  // namespace lowp
