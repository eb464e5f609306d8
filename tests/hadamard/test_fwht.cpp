// FWHT kernels and the bfloat16/float16 conversions, against independent oracles: a
// double-precision butterfly (itself checked against the closed form
// H[i][j] = (-1)^popcount(i & j)), exact integer identities, and an exact rounding oracle
// for the 16-bit formats built from decoded values in double.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lowp/hadamard/fwht.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/half.hpp"
#include "support/test_support.hpp"

namespace {

using lowp::Isa;
namespace hd = lowp::hadamard;

// --- oracles -------------------------------------------------------------------------------

std::vector<double> fwht_double(std::vector<double> x) {
  for (std::size_t h = 1; h < x.size(); h *= 2)
    for (std::size_t i = 0; i < x.size(); i += 2 * h)
      for (std::size_t j = i; j < i + h; ++j) {
        const double a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
  return x;
}

using lowp::test::normal_floats;


bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ||got - want||_2 / ||want||_2 with want = scale * H x in double.
double rel_error(const std::vector<float>& x, const std::vector<float>& got, float scale) {
  std::vector<double> y = fwht_double(std::vector<double>(x.begin(), x.end()));
  double num = 0, den = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double w = y[i] * static_cast<double>(scale);
    num += (got[i] - w) * (got[i] - w);
    den += w * w;
  }
  return std::sqrt(num / den);
}

// Rounding error bound, c = 1: each of the log2(n) stages is sqrt(2) times an orthogonal map
// and rounds each output once (relative error <= 2^-24), so the error of stage k, carried
// through the remaining stages, is at most 2^-24 * ||y||_2; the scale adds one more rounding.
// The factor 1.0001 covers second-order terms.
double bound(std::size_t n) { return (std::countr_zero(n) + 1) * 0x1p-24 * 1.0001; }

// --- the double oracle itself ----------------------------------------------------------------

TEST(FwhtOracle, DoubleButterflyMatchesClosedForm) {
  for (std::size_t n = 1; n <= 64; n *= 2)
    for (std::size_t j = 0; j < n; ++j) {
      std::vector<double> e(n, 0.0);
      e[j] = 1.0;
      const auto col = fwht_double(e);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(col[i], (std::popcount(i & j) & 1) ? -1.0 : 1.0) << n << " " << i << " " << j;
    }
}

// --- float32 transforms ----------------------------------------------------------------------

TEST(Fwht, ReferenceIsExactOnColumnsOfH) {
  for (std::size_t n = 1; n <= 256; n *= 2)
    for (std::size_t j = 0; j < n; j += 7) {
      std::vector<float> e(n, 0.0f);
      e[j] = 1.0f;
      hd::reference::fwht(e.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(e[i], (std::popcount(i & j) & 1) ? -1.0f : 1.0f) << n << " " << i << " " << j;
    }
}

TEST(Fwht, AccuracyEveryKernelEverySize) {
  for (int k = 0; k <= 20; ++k) {
    const std::size_t n = std::size_t{1} << k;
    const auto x = normal_floats(n, 100 + k);
    for (float scale : {1.0f, hd::orthonormal_scale(n)}) {
      auto ref = x;
      hd::reference::fwht(ref.data(), n, scale);
      const double err = rel_error(x, ref, scale);
      EXPECT_LE(err, bound(n)) << "reference n=" << n << " scale=" << scale;
      for (Isa isa : lowp::test::available_isas()) {
        auto y = x;
        hd::fwht_rows_isa(isa, y.data(), 1, n, n, scale);
        EXPECT_TRUE(same_bits(y, ref)) << lowp::isa_name(isa) << " n=" << n << " scale=" << scale;
      }
      auto y = x;
      hd::fwht(y.data(), n, scale);
      EXPECT_TRUE(same_bits(y, ref)) << "fwht n=" << n;
    }
  }
}

TEST(Fwht, Accuracy2To24) {
  // Long enough for the nested column transforms (more than 256 blocks).
  const std::size_t n = std::size_t{1} << 24;
  const float s = hd::orthonormal_scale(n);
  const auto x = normal_floats(n, 24);
  auto y = x, ref = x;
  hd::fwht(y.data(), n, s);
  EXPECT_LE(rel_error(x, y, s), bound(n));
  hd::reference::fwht(ref.data(), n, s);
  EXPECT_TRUE(same_bits(y, ref));
}

TEST(Fwht, InvolutionIsExactOnSmallIntegers) {
  // |entries| stay below 2^24 at every stage, so all arithmetic is exact: H(Hx) = n x.
  std::mt19937 g(7);
  std::uniform_int_distribution<int> d(-8, 8);
  for (std::size_t n = 1; n <= 1024; n *= 2)
    for (Isa isa : lowp::test::available_isas()) {
      std::vector<float> x(n);
      for (auto& v : x) v = static_cast<float>(d(g));
      auto y = x;
      hd::fwht_rows_isa(isa, y.data(), 1, n, n);
      hd::fwht_rows_isa(isa, y.data(), 1, n, n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(y[i], static_cast<float>(n) * x[i]) << lowp::isa_name(isa) << " n=" << n;
    }
}

TEST(Fwht, OrthonormalTwiceIsIdentityToRounding) {
  for (int k : {5, 12, 16}) {
    const std::size_t n = std::size_t{1} << k;
    const auto x = normal_floats(n, k);
    auto y = x;
    const float s = hd::orthonormal_scale(n);
    hd::fwht(y.data(), n, s);
    hd::fwht(y.data(), n, s);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < n; ++i) {
      num += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
      den += double(x[i]) * x[i];
    }
    // Two transforms and the rounding of 1/sqrt(n) to float (relative 2^-24 each).
    EXPECT_LE(std::sqrt(num / den), 2 * bound(n) + 2 * 0x1p-24) << n;
  }
}

TEST(Fwht, RowsWithGapLeaveGapUntouched) {
  const float sentinel = -12345.5f;
  for (Isa isa : lowp::test::available_isas())
    for (std::size_t n : {1, 4, 16, 64, 4096, 16384}) {
      const std::size_t rows = 5, stride = n + 37;
      std::vector<float> m(rows * stride, sentinel);
      std::vector<std::vector<float>> want;
      for (std::size_t r = 0; r < rows; ++r) {
        const auto x = normal_floats(n, static_cast<std::uint32_t>(r * 31 + n));
        std::copy(x.begin(), x.end(), m.begin() + r * stride);
        auto w = x;
        hd::reference::fwht(w.data(), n, 0.5f);
        want.push_back(w);
      }
      hd::fwht_rows_isa(isa, m.data(), rows, n, stride, 0.5f);
      for (std::size_t r = 0; r < rows; ++r) {
        std::vector<float> got(m.begin() + r * stride, m.begin() + r * stride + n);
        EXPECT_TRUE(same_bits(got, want[r])) << lowp::isa_name(isa) << " n=" << n << " row " << r;
        for (std::size_t c = n; c < stride; ++c)
          ASSERT_EQ(m[r * stride + c], sentinel) << lowp::isa_name(isa) << " n=" << n;
      }
    }
}

// Rows laid end to end (stride n), as many as fill one L1 batch and more (the kernels take
// rows of at most 8 KiB several at a time, a first pass over all of them and then their later
// passes): each row reference::fwht's bits, the batch's last rows and a partial last batch
// included.
TEST(Fwht, ContiguousRowsAreEachTheReference) {
  for (Isa isa : lowp::test::available_isas())
    for (std::size_t n : {16, 32, 128, 256, 512, 1024, 2048, 4096})
      for (std::size_t rows : {2, 3, 5, 9, 17})
        for (const float scale : {1.0f, hd::orthonormal_scale(n)}) {
          const auto m = normal_floats(rows * n, static_cast<std::uint32_t>(n * 7 + rows));
          auto got = m;
          hd::fwht_rows_isa(isa, got.data(), rows, n, n, scale);
          for (std::size_t r = 0; r < rows; ++r) {
            std::vector<float> want(m.begin() + r * n, m.begin() + (r + 1) * n);
            hd::reference::fwht(want.data(), n, scale);
            EXPECT_TRUE(std::memcmp(want.data(), got.data() + r * n, n * sizeof(float)) == 0)
                << lowp::isa_name(isa) << " n=" << n << " rows=" << rows << " row " << r << " scale=" << scale;
          }
        }
}

// Column transforms: each column of an m-row block gets reference::fwht's bits, at column
// counts around the SIMD widths and the strip width, in place and out of place (the source
// untouched), with the columns past `cols` untouched.
TEST(Fwht, ColumnsAreTheTransformsOfTheColumns) {
  const float sentinel = -12345.5f;
  for (bool in_place : {true, false})
    for (std::size_t m : {1, 2, 16, 32, 128, 512})
      for (std::size_t cols : {1, 7, 16, 33, 300, 2100}) {
        const std::size_t stride = cols + 5;
        const auto x = normal_floats(m * stride, static_cast<std::uint32_t>(m * 7 + cols));
        std::vector<float> src = x, got = in_place ? x : std::vector<float>(x.size(), sentinel);
        for (std::size_t r = 0; r < m; ++r)
          for (std::size_t c = cols; c < stride; ++c) got[r * stride + c] = sentinel;
        hd::fwht_columns(in_place ? got.data() : src.data(), got.data(), m, cols, stride, 0.125f);
        for (std::size_t c = 0; c < cols; ++c) {
          std::vector<float> col(m), out(m);
          for (std::size_t r = 0; r < m; ++r) col[r] = x[r * stride + c], out[r] = got[r * stride + c];
          hd::reference::fwht(col.data(), m, 0.125f);
          ASSERT_TRUE(same_bits(out, col)) << "m=" << m << " cols=" << cols << " column " << c << " in place " << in_place;
        }
        for (std::size_t r = 0; r < m; ++r)
          for (std::size_t c = cols; c < stride; ++c) ASSERT_EQ(got[r * stride + c], sentinel) << m << "x" << cols;
        if (!in_place) {
          EXPECT_TRUE(same_bits(src, x)) << "the source changed";
        }
      }
  std::vector<float> x(64);
  EXPECT_THROW(hd::fwht_columns(x.data(), x.data(), 3, 4, 4), lowp::Error);
  EXPECT_THROW(hd::fwht_columns(x.data(), x.data(), 4, 8, 7), lowp::Error);
  EXPECT_THROW(hd::fwht_columns(nullptr, x.data(), 4, 8, 8), lowp::Error);
  EXPECT_THROW(hd::fwht_rows_from(x.data(), nullptr, 2, 16, 16), lowp::Error);
}

// Out-of-place rows: fwht_rows' bits in dst, the source untouched, at lengths from one
// register to past kBlock (where the rows are copied first), with and without a gap.
TEST(Fwht, RowsFromASourceAreTheTransformsOfItsRows) {
  const float sentinel = -12345.5f;
  for (std::size_t n : {std::size_t{1}, std::size_t{4}, std::size_t{16}, std::size_t{32}, std::size_t{64},
                        std::size_t{4096}, std::size_t{1} << 15})
    for (std::size_t gap : {0, 3}) {
      const std::size_t rows = n > 4096 ? 2 : 7, stride = n + gap;
      const auto x = normal_floats(rows * stride, static_cast<std::uint32_t>(n + gap));
      std::vector<float> want = x, got(x.size(), sentinel), src = x;
      hd::fwht_rows(want.data(), rows, n, stride, 0.25f);
      hd::fwht_rows_from(src.data(), got.data(), rows, n, stride, 0.25f);
      EXPECT_TRUE(same_bits(src, x)) << "the source changed, n=" << n;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < stride; ++c)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[r * stride + c]),
                    std::bit_cast<std::uint32_t>(c < n ? want[r * stride + c] : sentinel))
              << "n=" << n << " row " << r << " column " << c;
    }
}

TEST(Fwht, ThreadCountIndependence) {
  struct Case {
    std::size_t rows, n;
  };
  for (Case c : {Case{64, 4096}, Case{1000, 128}, Case{1, std::size_t{1} << 20}, Case{3, std::size_t{1} << 16}}) {
    const auto x = normal_floats(c.rows * c.n, 99);
    auto a = x, b = x;
    omp_set_num_threads(1);
    hd::fwht_rows(a.data(), c.rows, c.n, c.n, 0.25f);
    omp_set_num_threads(2);
    hd::fwht_rows(b.data(), c.rows, c.n, c.n, 0.25f);
    EXPECT_TRUE(same_bits(a, b)) << c.rows << "x" << c.n;
    std::vector<std::uint16_t> h(c.rows * c.n), h1, h2;
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = lowp::f32_to_bf16(x[i]);
    h1 = h2 = h;
    omp_set_num_threads(1);
    hd::fwht_rows_bf16(h1.data(), c.rows, c.n, c.n);
    omp_set_num_threads(2);
    hd::fwht_rows_bf16(h2.data(), c.rows, c.n, c.n);
    EXPECT_EQ(h1, h2) << "bf16 " << c.rows << "x" << c.n;
  }
  omp_set_num_threads(omp_get_num_procs());
}

TEST(Fwht, BadInputThrowsNamingTheValue) {
  std::vector<float> x(64);
  std::vector<std::uint16_t> h(64);
  for (std::size_t n : {0, 3, 6, 12, 100}) {
    try {
      hd::fwht(x.data(), n);
      ADD_FAILURE() << "no error for n=" << n;
    } catch (const lowp::Error& e) {
      EXPECT_NE(std::string(e.what()).find("n = " + std::to_string(n)), std::string::npos) << e.what();
    }
    EXPECT_THROW(hd::fwht_rows(x.data(), 2, n, 32), lowp::Error);
    EXPECT_THROW(hd::fwht_rows_bf16(h.data(), 2, n, 32), lowp::Error);
    EXPECT_THROW(hd::fwht_rows_f16(h.data(), 2, n, 32), lowp::Error);
  }
  EXPECT_THROW(hd::fwht(x.data(), std::size_t{1} << 31), lowp::Error);
  try {
    hd::fwht_rows(x.data(), 2, 32, 31);
    ADD_FAILURE() << "no error for stride < n";
  } catch (const lowp::Error& e) {
    EXPECT_NE(std::string(e.what()).find("31"), std::string::npos) << e.what();
  }
  EXPECT_THROW(hd::fwht_rows_bf16(h.data(), 2, 32, 16), lowp::Error);
  EXPECT_THROW(hd::fwht_rows_f16(h.data(), 2, 32, 16), lowp::Error);
  EXPECT_NO_THROW(hd::fwht_rows(x.data(), 0, 32, 32));  // no rows: nothing to do
}

TEST(Fwht, NanAndInfPropagateWithinTheirRow) {
  const float inf = std::numeric_limits<float>::infinity();
  for (Isa isa : lowp::test::available_isas())
    for (std::size_t n : {1, 2, 16, 256, 8192}) {
      for (float bad : {std::numeric_limits<float>::quiet_NaN(), inf, -inf}) {
        auto m = normal_floats(3 * n, 5);
        m[n + n / 3] = bad;  // row 1 only
        auto clean = m;
        hd::fwht_rows_isa(isa, m.data(), 3, n, n);
        // Every output depends on every input: row 1 is entirely non-finite (an Inf gives
        // +-Inf everywhere, a NaN NaN everywhere).
        for (std::size_t i = n; i < 2 * n; ++i) {
          ASSERT_FALSE(std::isfinite(m[i])) << lowp::isa_name(isa) << " n=" << n << " i=" << i;
          if (std::isnan(bad)) {
            ASSERT_TRUE(std::isnan(m[i]));
          }
        }
        for (std::size_t r : {0, 2}) {
          std::vector<float> want(clean.begin() + r * n, clean.begin() + (r + 1) * n);
          hd::reference::fwht(want.data(), n);
          std::vector<float> got(m.begin() + r * n, m.begin() + (r + 1) * n);
          ASSERT_TRUE(same_bits(got, want)) << lowp::isa_name(isa) << " n=" << n << " row " << r;
        }
      }
    }
}

// --- 16-bit conversions ----------------------------------------------------------------------

// Independent decoders (value arithmetic in double); the all-ones exponent decodes to the
// next power of two (the overflow threshold), which the rounding oracle needs.
double f16_value(std::uint16_t c) {
  const int e = (c >> 10) & 0x1f, m = c & 0x3ff;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (c & 0x8000) ? -v : v;
}
double bf16_value(std::uint16_t c) {
  const int e = (c >> 7) & 0xff, m = c & 0x7f;
  const double v = e == 0 ? std::ldexp(m, -133) : std::ldexp(128 + m, e - 134);
  return (c & 0x8000) ? -v : v;
}

// Round-to-nearest-even of a float by search over the positive codes [0, top] (top = the
// Inf code), comparing with exact midpoints (dyadic rationals of few bits: exact in double).
template <class Value>
std::uint16_t round_oracle(float x, std::uint16_t top, Value value) {
  const double a = std::fabs(static_cast<double>(x));
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  std::uint16_t lo = 0, hi = top;  // value(lo) <= a; find the largest such code below top
  if (a >= value(top)) return sign | top;
  while (hi - lo > 1) {
    const auto mid = static_cast<std::uint16_t>((lo + hi) / 2);
    (value(mid) <= a ? lo : hi) = mid;
  }
  const double midpoint = (value(lo) + value(hi)) / 2;
  std::uint16_t r = a < midpoint ? lo : a > midpoint ? hi : ((lo & 1) ? hi : lo);
  return sign | r;
}

TEST(Half, EveryCodeRoundTrips) {
  for (std::uint32_t c = 0; c < 0x10000; ++c) {
    const auto h = static_cast<std::uint16_t>(c);
    ASSERT_EQ(lowp::f32_to_f16(lowp::f16_to_f32(h)), h) << std::hex << c;
    ASSERT_EQ(lowp::f32_to_bf16(lowp::bf16_to_f32(h)), h) << std::hex << c;
    const bool f16_nan = (c & 0x7c00) == 0x7c00 && (c & 0x3ff);
    const bool bf16_nan = (c & 0x7f80) == 0x7f80 && (c & 0x7f);
    if (f16_nan) {
      ASSERT_TRUE(std::isnan(lowp::f16_to_f32(h)));
    } else {
      ASSERT_EQ(static_cast<double>(lowp::f16_to_f32(h)), (c & 0x7c00) == 0x7c00
                                                               ? ((c & 0x8000) ? -INFINITY : INFINITY)
                                                               : f16_value(h)) << std::hex << c;
    }
    if (bf16_nan) {
      ASSERT_TRUE(std::isnan(lowp::bf16_to_f32(h)));
    } else if ((c & 0x7f80) != 0x7f80) {
      ASSERT_EQ(static_cast<double>(lowp::bf16_to_f32(h)), bf16_value(h)) << std::hex << c;
    }
  }
}

// Floats near every rounding boundary of both formats, plus random bit patterns.
std::vector<float> rounding_sample() {
  std::vector<float> s;
  for (std::uint32_t c = 0; c < 0x7c00; ++c) {  // around each f16 midpoint
    const double mid = (f16_value(static_cast<std::uint16_t>(c)) + f16_value(static_cast<std::uint16_t>(c + 1))) / 2;
    const float f = static_cast<float>(mid);  // exact: 12 significant bits
    for (int d = -2; d <= 2; ++d) s.push_back(lowp::f32_from_bits(lowp::f32_bits(f) + d));
  }
  for (std::uint32_t c = 0; c < 0x7f80; ++c) {  // around each bf16 midpoint
    const std::uint32_t mid = (c << 16) | 0x8000u;
    for (int d = -2; d <= 2; ++d) s.push_back(lowp::f32_from_bits(mid + d));
  }
  std::mt19937 g(3);
  for (int i = 0; i < 1'000'000; ++i) s.push_back(lowp::f32_from_bits(g()));
  std::vector<float> out;
  for (float f : s)
    if (!std::isnan(f)) {
      out.push_back(f);
      out.push_back(-f);
    }
  return out;
}

TEST(Half, FloatToF16RoundsToNearestEven) {
  for (float f : rounding_sample())
    ASSERT_EQ(lowp::f32_to_f16(f), round_oracle(f, 0x7c00, f16_value)) << std::hexfloat << f;
}

TEST(Half, FloatToBf16RoundsToNearestEven) {
  for (float f : rounding_sample())
    ASSERT_EQ(lowp::f32_to_bf16(f), round_oracle(f, 0x7f80, bf16_value)) << std::hexfloat << f;
}

TEST(Half, NanStaysNan) {
  std::mt19937 g(4);
  for (int i = 0; i < 100000; ++i) {
    const std::uint32_t u = 0x7f800001u + g() % 0x7fffffu;
    const float f = lowp::f32_from_bits(u | (i & 1 ? 0x80000000u : 0));
    ASSERT_TRUE(std::isnan(lowp::f16_to_f32(lowp::f32_to_f16(f)))) << std::hex << u;
    ASSERT_TRUE(std::isnan(lowp::bf16_to_f32(lowp::f32_to_bf16(f)))) << std::hex << u;
  }
}

// --- storage variants ------------------------------------------------------------------------

// Distance in ulps between two finite codes of a sign-magnitude 16-bit format.
int ulp_distance(std::uint16_t a, std::uint16_t b) {
  auto key = [](std::uint16_t c) { return (c & 0x8000) ? -static_cast<int>(c & 0x7fff) : static_cast<int>(c); };
  return std::abs(key(a) - key(b));
}

template <bool Bf16>
void check_storage(float magnitude, float scale) {
  auto enc = Bf16 ? lowp::f32_to_bf16 : lowp::f32_to_f16;
  auto dec = Bf16 ? lowp::bf16_to_f32 : lowp::f16_to_f32;
  for (std::size_t n : {1, 2, 8, 16, 64, 4096, 16384}) {
    const std::size_t rows = 3, stride = n + 5;
    auto src = normal_floats(rows * stride, static_cast<std::uint32_t>(n));
    std::vector<std::uint16_t> h(rows * stride);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = enc(src[i] * magnitude);
    auto orig = h;
    if (Bf16)
      hd::fwht_rows_bf16(h.data(), rows, n, stride, scale);
    else
      hd::fwht_rows_f16(h.data(), rows, n, stride, scale);
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<float> f(n);
      std::vector<double> d(n);
      for (std::size_t i = 0; i < n; ++i) d[i] = f[i] = dec(orig[r * stride + i]);
      hd::reference::fwht(f.data(), n, scale);
      d = fwht_double(d);
      double norm = 0;
      for (double v : d) norm += v * scale * v * scale;
      norm = std::sqrt(norm);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint16_t got = h[r * stride + i];
        ASSERT_EQ(got, enc(f[i])) << (Bf16 ? "bf16" : "f16") << " n=" << n << " i=" << i;
        const double want = d[i] * scale;  // exact (power-of-two scales) then rounded once
        const std::uint16_t once = Bf16 ? round_oracle(static_cast<float>(want), 0x7f80, bf16_value)
                                        : round_oracle(static_cast<float>(want), 0x7c00, f16_value);
        // Within one 16-bit ulp of rounding the exact result once -- unless cancellation made
        // this output so small that the float32 error (<= bound(n) * ||y||_2, see above)
        // exceeds that ulp; then |got - exact| <= that error + half an ulp of got.
        if (ulp_distance(got, once) > 1) {
          const double half_ulp = std::fabs(dec(static_cast<std::uint16_t>(got ^ 1)) - dec(got)) / 2;
          ASSERT_LE(std::fabs(dec(got) - want), bound(n) * norm + half_ulp)
              << (Bf16 ? "bf16" : "f16") << " n=" << n << " i=" << i;
        }
      }
      for (std::size_t c = n; c < stride; ++c) ASSERT_EQ(h[r * stride + c], orig[r * stride + c]);
    }
  }
}

TEST(FwhtStorage, Bf16) {
  check_storage<true>(1.0f, 1.0f);
  check_storage<true>(1.0f, 0.0078125f);
  check_storage<true>(1e-38f, 0.25f);  // subnormal results
}

TEST(FwhtStorage, F16) {
  check_storage<false>(1.0f, 1.0f);
  check_storage<false>(1.0f, 0.0078125f);
  check_storage<false>(1e-4f, 0.0625f);   // subnormal results
  check_storage<false>(8000.0f, 1.0f);    // overflow to Inf for long rows
}

}  // namespace
