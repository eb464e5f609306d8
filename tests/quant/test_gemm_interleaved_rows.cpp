// InterleavedRows: a float32 matrix re-laid 64 rows at a time. Its widened rows are the source
// rows (the source freed first: nothing reads it again), every ISA's interleaved dot equals the
// scalar fma chain written here, and gemm_f32 on it (one row: the interleaved dot; several: the
// packing through its row decoder) gives the source matrix's bits, at one and two threads, for
// row counts that leave a partial last group and columns that leave a partial K block; f16 and
// bf16 rows (random bits, some NaN or infinite) the same way, with each ISA's 16-bit dot. A
// block-coded matrix (a toy type here, with its interleaved dot written in the test) is re-laid
// 16 rows at a time, bytewise and in 4-byte words (StoredMatrix::interleave_word), its blocks
// gathered back as a window needs them or whole rows at once (block_bytes 0), with the same
// checks (the mutants in mind: a word copy that transposes bytes, a widening that transposes a
// word copy back bytewise, or one that gathers the wrong blocks' bytes).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../../quant/src/gemm/gemv_f32_kernels.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/half.hpp"
#include "lowp/quant/gemm.hpp"
#include "lowp/quant/interleaved_rows.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp;
using namespace lowp::quant;

bool il_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// gemm_f32 on the copy (one row: its interleaved dot; several: the packing through its row
// decoder) gives the source's bits, at one and two threads.
void expect_same_products(const StoredMatrix& source, const StoredMatrix& copy) {
  const std::size_t rows = source.rows, cols = source.cols;
  for (const std::size_t M : {1, 5})
    for (const int threads : {1, 2}) {
      const auto x = test::normal_floats(M * cols, 99);
      std::vector<float> want(M * rows), y(M * rows);
      gemm_f32(x.data(), source, want.data(), M, false, threads);
      gemm_f32(x.data(), copy, y.data(), M, false, threads);
      EXPECT_TRUE(il_same_bits(y, want)) << rows << " x " << cols << " M=" << M << " threads=" << threads;
    }
}

// The source's element bytes (f32, or f16 / bf16 words of random bits, NaNs and infinities
// among them) and their float32 values, widened here.
struct Source {
  std::vector<std::uint8_t> bytes;
  std::vector<float> values;
};
Source source(StoredType t, std::size_t n, std::uint32_t seed) {
  Source s;
  if (t == StoredType::f32) {
    s.values = test::normal_floats(n, seed);
    s.bytes.resize(4 * n);
    std::memcpy(s.bytes.data(), s.values.data(), 4 * n);
    return s;
  }
  std::mt19937 gen(seed);
  s.bytes.resize(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    // Mostly finite: a NaN or infinity poisons the rest of its row's chain.
    const auto h = static_cast<std::uint16_t>(gen() % 64 ? (gen() & 0x3FFF) | (gen() & 0x8000) : gen());
    std::memcpy(s.bytes.data() + 2 * i, &h, 2);
    s.values.push_back(t == StoredType::bf16 ? std::bit_cast<float>(std::uint32_t{h} << 16) : f16_to_f32(h));
  }
  return s;
}

TEST(InterleavedRows, GivesTheSourceRowsAndItsProductsBits) {
  for (const StoredType t : {StoredType::f32, StoredType::f16, StoredType::bf16})
  for (const std::size_t rows : {1, 63, 64, 100, 200})
    for (const std::size_t cols : {32, 96, 544}) {
      const Source w = source(t, rows * cols, static_cast<std::uint32_t>(rows * 7 + cols));
      // The source one byte past an aligned start (a mapped file's tensors need not align).
      auto* src = new std::vector<std::uint8_t>(w.bytes.size() + 1);
      std::copy(w.bytes.begin(), w.bytes.end(), src->begin() + 1);
      const InterleavedRows il(StoredMatrix{t, src->data() + 1, rows, cols});
      std::fill(src->begin(), src->end(), std::uint8_t{0x7F});  // nothing reads the source again
      delete src;
      const StoredMatrix& m = il.matrix();
      ASSERT_EQ(m.rows, rows);
      ASSERT_EQ(m.cols, cols);
      std::vector<float> got(rows * cols);
      widen_rows(m, 0, rows, got.data());
      EXPECT_TRUE(il_same_bits(got, w.values)) << rows << " x " << cols;
      expect_same_products(StoredMatrix{t, w.bytes.data(), rows, cols}, m);
    }
}

TEST(InterleavedRows, EveryIsaDotIsTheFmaChainOfEachRow) {
  constexpr std::size_t R = detail::kInterleave, n = 300;
  std::vector<float> store(R * n + 16);
  float* w = store.data() + (16 - reinterpret_cast<std::uintptr_t>(store.data()) / 4 % 16) % 16;  // 64-byte aligned
  const auto vals = test::normal_floats(R * n, 3), x = test::normal_floats(n, 4), acc0 = test::normal_floats(R, 5);
  std::copy(vals.begin(), vals.end(), w);
  std::vector<float> want(acc0);
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t k = 0; k < n; ++k) want[r] = std::fma(x[k], w[k * R + r], want[r]);
  const std::pair<Isa, detail::InterleavedDotFn> dots[] = {{Isa::scalar, &detail::dot_interleaved_scalar},
                                                           {Isa::avx2, &detail::dot_interleaved_avx2},
                                                           {Isa::avx512, &detail::dot_interleaved_avx512}};
  for (const auto& [isa, dot] : dots) {
    if (!isa_available(isa)) continue;
    std::vector<float> acc(acc0);
    dot(x.data(), w, n, acc.data());
    EXPECT_TRUE(il_same_bits(acc, want)) << isa_name(isa);
  }
  // f16 and bf16 rows: their widened values' chains.
  for (const StoredType t : {StoredType::f16, StoredType::bf16}) {
    const Source s = source(t, R * n, 6);
    std::vector<std::uint16_t> w16(R * n);
    std::memcpy(w16.data(), s.bytes.data(), s.bytes.size());
    std::vector<float> want16(acc0);
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t k = 0; k < n; ++k) want16[r] = std::fma(x[k], s.values[k * R + r], want16[r]);
    const bool f16 = t == StoredType::f16;
    const std::pair<Isa, detail::Interleaved16DotFn> dots16[] = {
        {Isa::scalar, f16 ? &detail::dot_interleaved16_scalar<StoredType::f16> : &detail::dot_interleaved16_scalar<StoredType::bf16>},
        {Isa::avx2, f16 ? &detail::dot_interleaved16_avx2<StoredType::f16> : &detail::dot_interleaved16_avx2<StoredType::bf16>},
        {Isa::avx512, f16 ? &detail::dot_interleaved16_avx512<StoredType::f16> : &detail::dot_interleaved16_avx512<StoredType::bf16>}};
    for (const auto& [isa, dot] : dots16) {
      if (!isa_available(isa)) continue;
      std::vector<float> acc(acc0);
      dot(x.data(), w16.data(), n, acc.data());
      EXPECT_TRUE(il_same_bits(acc, want16)) << (f16 ? "f16 " : "bf16 ") << isa_name(isa);
    }
  }
}

// The toy block type: 32 int8 after a float scale (36 bytes), each element q * scale.
constexpr std::size_t kToyBytes = 36;
float toy_elem(const std::uint8_t* block, std::size_t i) {
  float d;
  std::memcpy(&d, block, 4);
  return static_cast<float>(static_cast<std::int8_t>(block[4 + i])) * d;
}
void toy_widen(const void*, const void* row, std::size_t k0, std::size_t n, float* out) {
  const auto* b = static_cast<const std::uint8_t*>(row);
  for (std::size_t k = k0; k < k0 + n; ++k) out[k - k0] = toy_elem(b + k / 32 * kToyBytes, k % 32);
}
// Its context: a mark, and the word of its interleaved copy.
struct ToyCtx {
  int mark = 7;
  std::size_t word = 1;
};
// Its interleaved dot: row r's byte b at rows[16 (r / 16)] + (16 (b / W) + r % 16) W + b % W
// for words of W bytes; ctx must be the source's (checked through its mark).
void toy_dot_interleaved(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                         float* acc) {
  const auto& c = *static_cast<const ToyCtx*>(ctx);
  if (c.mark != 7) throw Error("toy dot: not the source's context");
  const std::size_t W = c.word;
  std::uint8_t block[kToyBytes];
  for (std::size_t r = 0; r < 64; ++r) {
    const auto* g = static_cast<const std::uint8_t*>(rows[r / kByteInterleave * kByteInterleave]) + r % kByteInterleave * W;
    for (std::size_t k = k0; k < k0 + n; ++k) {
      if (k % 32 == 0 || k == k0)
        for (std::size_t b = 0; b < kToyBytes; ++b) {
          const std::size_t e = k / 32 * kToyBytes + b;
          block[b] = g[e / W * kByteInterleave * W + e % W];
        }
      acc[r] = std::fma(x[k - k0], toy_elem(block, k % 32), acc[r]);
    }
  }
}

// A matrix of the toy type over `data` (rows of cols / 32 blocks), with its interleaved dot
// over words of `word` bytes.
StoredMatrix toy_matrix(const std::uint8_t* data, std::size_t rows, std::size_t cols, std::size_t word = 1) {
  static const ToyCtx bytes{7, 1}, words{7, 4};
  const ToyCtx& ctx = word == 4 ? words : bytes;
  StoredMatrix m{StoredType::custom, data, rows, cols};
  m.interleave_word = word;
  m.row_bytes = cols / 32 * kToyBytes;
  m.block = 32;
  m.block_bytes = kToyBytes;  // its blocks one after another
  m.widen = &toy_widen;
  m.ctx = &ctx;
  m.dot_interleaved = &toy_dot_interleaved;
  return m;
}

TEST(InterleavedRows, BlockCodedRowsGiveTheSourceRowsAndItsProductsBits) {
  for (const bool whole : {false, true})
  for (const std::size_t word : {1, 4})
  for (const std::size_t rows : {1, 15, 16, 70, 200})
    for (const std::size_t cols : {32, 96, 544}) {
      const std::size_t row_bytes = cols / 32 * kToyBytes;
      std::vector<std::uint8_t> bytes(rows * row_bytes + 1);
      std::mt19937 gen(static_cast<std::uint32_t>(rows * 7 + cols));
      for (auto& b : bytes) b = static_cast<std::uint8_t>(gen());
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t u = 0; u < cols / 32; ++u) {
          const float d = std::ldexp(1.0f + static_cast<float>(gen() % 1000) / 1000.0f, static_cast<int>(gen() % 9) - 4);
          std::memcpy(bytes.data() + 1 + r * row_bytes + u * kToyBytes, &d, 4);
        }
      StoredMatrix src = toy_matrix(bytes.data() + 1, rows, cols, word);  // not aligned
      if (whole) src.block_bytes = 0;
      std::vector<float> want_w(rows * cols);
      widen_rows(src, 0, rows, want_w.data());
      std::vector<std::uint8_t> kept(bytes);
      const InterleavedRows il(src, 2);
      std::fill(bytes.begin(), bytes.end(), std::uint8_t{0x7F});  // nothing reads the source's bytes again
      const StoredMatrix& m = il.matrix();
      ASSERT_EQ(m.rows, rows);
      ASSERT_EQ(m.cols, cols);
      ASSERT_EQ(stored_bytes(m), rows * row_bytes);
      std::vector<float> got(rows * cols);
      widen_rows(m, 0, rows, got.data());
      EXPECT_TRUE(il_same_bits(got, want_w)) << rows << " x " << cols << " word " << word << (whole ? " whole" : "");
      src.data = kept.data() + 1;
      expect_same_products(src, m);
    }
}

// The rows a window's widening transposes back for a group are kept for the next rows of it:
// two copies of one shape, widened in turn (the second made where the first was freed, and then
// beside a live first), each give their own source's rows. The mutant in mind: that cache keyed
// by the group and columns alone, which hands the second copy the first one's rows.
TEST(InterleavedRows, BlockCodedCopiesOfOneShapeWidenTheirOwnRows) {
  constexpr std::size_t rows = 16, cols = 64, row_bytes = cols / 32 * kToyBytes;  // one group
  const auto make = [&](std::uint32_t seed) {
    std::vector<std::uint8_t> bytes(rows * row_bytes);
    std::mt19937 gen(seed);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(gen());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t u = 0; u < cols / 32; ++u) {
        const float d = 1.0f + static_cast<float>(r + u);
        std::memcpy(bytes.data() + r * row_bytes + u * kToyBytes, &d, 4);
      }
    return bytes;
  };
  const std::vector<std::uint8_t> a = make(1), b = make(2);
  const auto matrix = [&](const std::vector<std::uint8_t>& bytes) { return toy_matrix(bytes.data(), rows, cols); };
  const auto widened = [](const StoredMatrix& m) {
    std::vector<float> out(rows * cols);
    widen_rows(m, 0, rows, out.data());
    return out;
  };
  const std::vector<float> want_a = widened(matrix(a)), want_b = widened(matrix(b));
  ASSERT_FALSE(il_same_bits(want_a, want_b));
  { const InterleavedRows il(matrix(a)); EXPECT_TRUE(il_same_bits(widened(il.matrix()), want_a)); }
  const InterleavedRows il_b(matrix(b));
  EXPECT_TRUE(il_same_bits(widened(il_b.matrix()), want_b));
  const InterleavedRows il_a(matrix(a));
  EXPECT_TRUE(il_same_bits(widened(il_a.matrix()), want_a));
  EXPECT_TRUE(il_same_bits(widened(il_b.matrix()), want_b));
}

TEST(InterleavedRows, RefusesWhatItCannotRelay) {
  std::vector<float> w(64 * 40, 1.0f);
  const std::uint32_t map[2] = {1, 0};
  EXPECT_THROW(InterleavedRows(StoredMatrix{StoredType::f32, w.data(), 64, 40}), Error);  // 40 columns
  EXPECT_THROW(InterleavedRows(StoredMatrix{StoredType::bf16, w.data(), 64, 40}), Error);
  EXPECT_THROW(InterleavedRows(StoredMatrix{StoredType::f32, w.data(), 0, 32}), Error);  // no rows
  StoredMatrix mapped{StoredType::f32, w.data(), 2, 32};
  mapped.row_map = map;
  EXPECT_THROW((InterleavedRows(mapped)), Error);
  EXPECT_FALSE(InterleavedRows::fits(mapped));
  EXPECT_TRUE(InterleavedRows::fits(StoredMatrix{StoredType::f32, w.data(), 64, 32}));
  StoredMatrix coded = toy_matrix(reinterpret_cast<const std::uint8_t*>(w.data()), 64, 32);
  EXPECT_TRUE(InterleavedRows::fits(coded));
  for (const std::size_t word : {2, 3, 8}) {  // words: 1 or 4
    StoredMatrix w = coded;
    w.interleave_word = word;
    EXPECT_FALSE(InterleavedRows::fits(w)) << word;
  }
  StoredMatrix past = coded;
  past.block_bytes = kToyBytes + 4;  // blocks that would run past the row
  EXPECT_FALSE(InterleavedRows::fits(past));
  coded.dot_interleaved = nullptr;  // block-coded: needs its interleaved dot
  EXPECT_FALSE(InterleavedRows::fits(coded));
  EXPECT_THROW((InterleavedRows(coded)), Error);
}

}  // namespace
