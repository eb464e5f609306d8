// PackedWeight: a 4-bit quantized weight kept as its codes and group factors. Its widened rows
// are dequantize()'s values bitwise (dequantize is itself checked against the formats' oracles
// in test_quantize), MX values are also recomputed here from the codes and E8M0 scales in
// double, every ISA's decoder equals the scalar one, and gemm_f32 on it gives the float
// weight's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../../quant/src/gemm/packed_weight_kernels.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/quant/gemm.hpp"
#include "lowp/quant/interleaved_rows.hpp"
#include "lowp/quant/packed_weight.hpp"
#include "lowp/quant/quantize.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp;
using namespace lowp::quant;

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// rows x cols normal values with a zero run of 32, a large row and a tiny row (their groups'
// factors far from the others).
std::vector<float> weight(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::vector<float> w = test::normal_floats(rows * cols, seed);
  for (std::size_t i = 0; i < 32 && i < cols; ++i) w[i] = 0.0f;
  for (std::size_t c = 0; c < cols && rows > 2; ++c) w[cols + c] *= 300.0f, w[2 * cols + c] *= 1e-3f;
  return w;
}

struct Packed {
  QuantizedTensor q;
  std::vector<float> values;
  std::optional<PackedWeight> p;
};

Packed pack(const std::string& spec, const std::vector<float>& w, std::size_t rows, std::size_t cols) {
  Packed out;
  out.q = quantize(parse_quant_spec(spec), w.data(), rows, cols);
  out.values.resize(rows * cols);
  dequantize(out.q, out.values.data());
  out.p = PackedWeight::pack(out.q, out.values.data());
  return out;
}

std::vector<float> widened(const StoredMatrix& m) {
  std::vector<float> out(m.rows * m.cols);
  widen_rows(m, 0, m.rows, out.data());
  return out;
}

// Multiplying (MX, NVFP4's two levels) and dividing (the integer and amax rules' multipliers)
// specs, in blocks of 16 and 32, per row, per tensor and in 16 x 16 tiles.
const char* const kSpecs[] = {"mxfp4",        "e2m1:b32:rceil", "nvfp4",       "e2m1:b16:4over6", "int4:row:int",
                              "int4:b32:int", "e2m1",           "e2m1:t16:nvfp4", "e2m1:b64:amax"};

TEST(PackedWeight, EveryFourBitSpecWidensToDequantizeBitwise) {
  const std::size_t rows = 48, cols = 128;
  const std::vector<float> w = weight(rows, cols, 3);
  for (const char* spec : kSpecs) {
    const Packed k = pack(spec, w, rows, cols);
    ASSERT_TRUE(k.p) << spec << " was not packed";
    EXPECT_TRUE(same_floats(widened(k.p->matrix()), k.values)) << spec;
    EXPECT_LE(k.p->bytes(), rows * cols / 2 + rows * cols / 16 * 4) << spec;  // codes + at most a factor per 16
  }
}

// The mutant in mind for both: a decoder that reads the high nibble first, or the factor of the
// wrong group. MX's values are code x 2^e exactly, so they are recomputed from the codes here.
TEST(PackedWeight, MxValuesAreTheCodesTimesTheirScales) {
  const std::size_t rows = 8, cols = 96;
  const std::vector<float> w = weight(rows, cols, 4);
  const Packed k = pack("mxfp4", w, rows, cols);
  ASSERT_TRUE(k.p);
  const std::vector<float> got = widened(k.p->matrix());
  const Format& f = k.q.spec.format;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const unsigned code = (k.q.codes[i / 2] >> (4 * (i % 2))) & 15u;
    const double want = decode(f, code) * static_cast<double>(k.q.scales[i / 32]);
    ASSERT_EQ(static_cast<double>(got[i]), want) << "element " << i;
  }
}

TEST(PackedWeight, EveryIsaDecoderIsTheScalarOneBitwise) {
  const std::size_t rows = 5, cols = 256;
  const std::vector<float> w = weight(rows, cols, 5);
  for (const char* spec : {"mxfp4", "nvfp4", "int4:b32:int", "int4:row:int"}) {
    const Packed k = pack(spec, w, rows, cols);
    ASSERT_TRUE(k.p) << spec;
    const StoredMatrix& m = k.p->matrix();
    const detail::PackedRows& layout = detail::packed_rows(m);
    for (Isa isa : test::available_isas()) {
      const auto widen = detail::packed_widen_kernel(isa);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t k0 : {0, 16, 48, 240})
          for (std::size_t n = 16; k0 + n <= cols; n += 48) {
            std::vector<float> a(n), b(n);
            const auto* row = static_cast<const std::uint8_t*>(m.data) + r * m.row_bytes;
            widen(layout, row, k0, n, a.data());
            detail::packed_widen_scalar(layout, row, k0, n, b.data());
            ASSERT_TRUE(same_floats(a, b)) << spec << " " << isa_name(isa) << " row " << r << " k0 " << k0 << " n " << n;
          }
    }
  }
}

// Each ISA's one-pass decode and dot (StoredMatrix::dot_lanes, 64 rows) against the fma chain
// written here over the scalar decoder's values, from random starting sums, over spans beginning
// at every 32 columns of the first 128 and ending anywhere after, in two calls that carry the
// chain through acc. The mutants in mind: the factor of the wrong 16 columns (NVFP4's groups
// of 16), the nibbles in the wrong order, a multiplying rule that divides. Each ISA's
// interleaved dot runs on the same rows laid out here as InterleavedRows lays them (groups of
// 16 rows, byte b of row r at 16 b + r, at an odd address), against the same chains.
TEST(PackedWeight, DotLanesAreTheFmaChainsOverTheScalarDecoder) {
  EXPECT_EQ(detail::packed_dot_kernel(Isa::scalar), nullptr);
  if (!isa_available(Isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU: no one-pass decode and dot is built to run";
  constexpr std::size_t R = 64, cols = 320;
  const std::vector<float> w = weight(R, cols, 9);
  const std::vector<float> x = test::normal_floats(cols, 10), start = test::normal_floats(R, 11);
  for (const Isa isa : {Isa::avx2, Isa::avx512})
  for (const char* spec : kSpecs) {
    if (!isa_available(isa)) {
      // Not "[  SKIPPED ]": CTest would then report the whole test skipped though AVX2's ran.
      std::printf("[   NOTE   ] %s packed dot not checked: not available on this CPU\n", std::string(isa_name(isa)).c_str());
      break;
    }
    const detail::PackedDotFn dot = detail::packed_dot_kernel(isa);
    ASSERT_NE(dot, nullptr) << isa_name(isa);
    const detail::PackedDotFn il_dot = detail::packed_dot_interleaved_kernel(isa);
    ASSERT_NE(il_dot, nullptr) << isa_name(isa);
    const Packed k = pack(spec, w, R, cols);
    ASSERT_TRUE(k.p) << spec;
    const StoredMatrix& m = k.p->matrix();
    ASSERT_NE(m.dot_lanes, nullptr) << spec;
    const detail::PackedRows& layout = detail::packed_rows(m);
    const void* rows[R];
    std::vector<float> values(R * cols);
    for (std::size_t r = 0; r < R; ++r) {
      rows[r] = static_cast<const std::uint8_t*>(m.data) + r * m.row_bytes;
      detail::packed_widen_scalar(detail::packed_rows(m), static_cast<const std::uint8_t*>(rows[r]), 0, cols,
                                  values.data() + r * cols);
    }
    constexpr std::size_t G = kByteInterleave;
    std::vector<std::uint8_t> il(R * m.row_bytes + 1);
    const void* il_rows[R];
    for (std::size_t r = 0; r < R; ++r) {
      il_rows[r] = il.data() + 1 + r * m.row_bytes;  // the kernel reads only each group's first
      for (std::size_t b = 0; b < m.row_bytes; ++b)
        il[1 + r / G * G * m.row_bytes + b * G + r % G] = static_cast<const std::uint8_t*>(rows[r])[b];
    }
    std::size_t differ = 0;
    for (std::size_t k0 = 0; k0 < 128; k0 += 32)
      for (std::size_t k1 = k0 + 32; k1 <= cols; k1 += 96) {
        std::vector<float> acc = start, acc_il = start;
        const std::size_t mid = k0 + (k1 - k0) / 64 * 32;
        if (mid > k0) dot(layout, rows, k0, mid - k0, x.data() + k0, acc.data());
        dot(layout, rows, mid, k1 - mid, x.data() + mid, acc.data());
        if (mid > k0) il_dot(layout, il_rows, k0, mid - k0, x.data() + k0, acc_il.data());
        il_dot(layout, il_rows, mid, k1 - mid, x.data() + mid, acc_il.data());
        for (std::size_t r = 0; r < R; ++r) {
          float a = start[r];
          for (std::size_t i = k0; i < k1; ++i) a = std::fma(x[i], values[r * cols + i], a);
          differ += std::memcmp(&a, &acc[r], 4) != 0;
          differ += std::memcmp(&a, &acc_il[r], 4) != 0;
        }
      }
    EXPECT_EQ(differ, 0u) << spec << " " << isa_name(isa);
  }
}

// gemm_f32 (the one-row GEMV and the packed GEMM, any thread count) on the packed weight gives
// the bits of gemm_f32 on the float32 values: the decode step relies on it.
TEST(PackedWeight, GemmOnItIsTheGemmOnTheFloatValues) {
  for (const auto& [N, K] : {std::pair<std::size_t, std::size_t>{1, 32}, {17, 64}, {40, 288}, {33, 800}, {100, 96}}) {
    const std::vector<float> w = weight(N, K, 6);
    for (const char* spec : {"mxfp4", "nvfp4", "int4:row:int", "int4:b32:int"}) {
      const Packed k = pack(spec, w, N, K);
      ASSERT_TRUE(k.p) << spec << " N=" << N << " K=" << K;
      for (std::size_t M : {1, 3})
        for (int threads : {1, 2, 3}) {
          const std::vector<float> x = test::normal_floats(M * K, 7);
          std::vector<float> want(M * N), got(M * N);
          gemm_f32(x.data(), k.values.data(), want.data(), M, N, K, false, threads);
          gemm_f32(x.data(), k.p->matrix(), got.data(), M, false, threads);
          EXPECT_TRUE(same_floats(got, want)) << spec << " M=" << M << " N=" << N << " K=" << K << " threads=" << threads;
        }
    }
  }
}

// Where the packed form cannot hold the weight, pack says so instead of packing something
// else. The last case is the mutant of a pack without its final check: the values handed to
// it are not dequantize()'s.
TEST(PackedWeight, WhatItCannotHoldIsNotPacked) {
  const std::vector<float> w = weight(4, 64, 8);
  EXPECT_FALSE(pack("mxfp8", w, 4, 64).p);        // 8-bit elements
  EXPECT_FALSE(pack("e2m1:b8:mx", w, 4, 64).p);   // groups of 8
  EXPECT_FALSE(pack("e2m1:col:amax", w, 4, 64).p);  // a factor per column
  const std::vector<float> narrow = weight(4, 24, 9);
  EXPECT_FALSE(pack("int4:row:int", narrow, 4, 24).p);  // 24 columns: not whole runs of 16
  Packed k = pack("mxfp4", w, 4, 64);
  ASSERT_TRUE(k.p);
  k.values[70] = std::nextafter(k.values[70], 1e30f);
  EXPECT_FALSE(PackedWeight::pack(k.q, k.values.data()));
}

TEST(PackedWeight, ConcatStacksTheRows) {
  const std::vector<float> a = weight(6, 64, 10), b = weight(3, 64, 11);
  const Packed pa = pack("mxfp4", a, 6, 64), pb = pack("mxfp4", b, 3, 64), pc = pack("e2m1:b32:rceil", b, 3, 64);
  ASSERT_TRUE(pa.p && pb.p && pc.p);
  const PackedWeight* ab[] = {&*pa.p, &*pb.p};
  const auto both = PackedWeight::concat(ab);
  ASSERT_TRUE(both);
  std::vector<float> want = pa.values;
  want.insert(want.end(), pb.values.begin(), pb.values.end());
  EXPECT_TRUE(same_floats(widened(both->matrix()), want));
  const PackedWeight* rules[] = {&*pa.p, &*pc.p};  // two scale rules: other factors, one layout
  EXPECT_TRUE(PackedWeight::concat(rules));
  const Packed pi = pack("int4:b32:int", a, 6, 64), pn = pack("nvfp4", a, 6, 64);
  ASSERT_TRUE(pi.p && pn.p);
  const PackedWeight* codes[] = {&*pa.p, &*pi.p};   // E2M1 and int4 codes
  const PackedWeight* groups[] = {&*pa.p, &*pn.p};  // groups of 32 and 16
  EXPECT_FALSE(PackedWeight::concat(codes));
  EXPECT_FALSE(PackedWeight::concat(groups));
}

// InterleavedRows' copy of packed rows (their factors before their codes, so a row decodes only
// whole) gives the weight's bits through its row decoder too: windows (M > 1) of more columns
// than one K block (256), whose packing widens each row from column 256 on. The mutant in mind:
// the copy's widening gathering only the bytes at k0 / block blocks in (right for GGUF's blocks
// one after another), which hands the decoder codes where it reads factors (it failed so for
// mxfp4, nvfp4 and int4:b32 before StoredMatrix::block_bytes).
TEST(PackedWeight, InterleavedCopyGivesItsProductsBitsPastOneKBlock) {
  const std::size_t rows = 40, cols = 640;
  const std::vector<float> w = weight(rows, cols, 9);
  for (const char* spec : {"mxfp4", "nvfp4", "int4:b32:int", "int4:row:int"}) {
    const Packed k = pack(spec, w, rows, cols);
    ASSERT_TRUE(k.p) << spec;
    ASSERT_TRUE(InterleavedRows::fits(k.p->matrix())) << spec;
    const InterleavedRows il(k.p->matrix());
    EXPECT_TRUE(same_floats(widened(il.matrix()), k.values)) << spec;
    for (const std::size_t M : {1, 5}) {
      const auto x = test::normal_floats(M * cols, 1);
      std::vector<float> want(M * rows), got(M * rows);
      gemm_f32(x.data(), k.p->matrix(), want.data(), M);
      gemm_f32(x.data(), il.matrix(), got.data(), M);
      EXPECT_TRUE(same_floats(got, want)) << spec << " M=" << M;
    }
  }
}

}  // namespace
