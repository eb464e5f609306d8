// Internal: the FWHT algorithm for one SIMD width, shared by the AVX2 and AVX-512 kernels.
//
// A vector is processed as registers of L lanes. The log2(L) lowest stages run inside each
// register (a lane swap, then one FMA with a +-1 vector: x*(+1) + swapped is a+b in the low
// lanes, x*(-1) + swapped is a-b in the high ones, each rounded once exactly like an add).
// Higher stages run across registers, up to Isa::radix stages per load/store pass
// (2^radix registers in flight). Stages always run in ascending order for each element,
// so the result is bitwise the reference's.
#pragma once
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>

#include "fwht_kernels.hpp"

namespace lowp::hadamard::detail {

template <class Isa>
struct Simd {
  using V = typename Isa::V;
  static constexpr std::size_t L = V::size;
  static constexpr int kIntra = std::countr_zero(L);
  static constexpr int kRadix = Isa::radix;
  // Stages per later pass inside a row: each pass loads and stores the row once more, so as
  // many as 2^R registers hold (AVX2: 16 ymm, a few spills cost less than another pass).
  static constexpr int kTailRadix = Isa::tail_radix;
  static constexpr std::size_t kChunk = L << kRadix;  // floats in one full first-pass group
  // Column passes with strides that are multiples of 4 KiB put all their rows in one L1
  // set; 8 rows fit its ways, 16 do not.
  static constexpr int kColRadix = kRadix < 3 ? kRadix : 3;

  struct Signs {
    V s[kIntra];
    V minus_one;
    Signs() {
      for (int st = 0; st < kIntra; ++st) {
        alignas(64) float a[L];
        for (std::size_t l = 0; l < L; ++l) a[l] = ((l >> st) & 1) ? -1.0f : 1.0f;
        s[st] = V::load_aligned(a);
      }
      minus_one = V(-1.0f);
      // Hidden from the optimiser, which would otherwise turn fma(b, -1, a) back into a - b.
      asm("" : "+v"(minus_one.data));
    }
  };

  // One in-register stage on v[0 .. N).
  template <int St, int N>
  static inline void intra_stage(V* v, const Signs& sg) {
#pragma GCC unroll 16
    for (int k = 0; k < N; ++k) v[k] = xsimd::fma(v[k], sg.s[St], Isa::template swap<St>(v[k]));
  }
  // One stage across registers, at register distance h, on v[0 .. N). FmaSub: a - b as
  // fma(b, -1, a) (the same rounding), which runs on the FMA pipes instead of the add pipes.
  template <bool FmaSub, int N>
  static inline void across_stage(int h, V* v, const Signs& sg) {
#pragma GCC unroll 16
    for (int i = 0; i < N; i += 2 * h)
#pragma GCC unroll 16
      for (int j = i; j < i + h; ++j) {
        const V a = v[j], b = v[j + h];
        v[j] = a + b;
        if constexpr (FmaSub)
          v[j + h] = xsimd::fma(b, sg.minus_one, a);
        else
          v[j + h] = a - b;
      }
  }
  // R stages across the registers v[0 .. 2^R).
  template <int R, bool FmaSub>
  static inline void across(V* v, const Signs& sg) {
#pragma GCC unroll 8
    for (int h = 1; h < (1 << R); h *= 2) across_stage<FmaSub, (1 << R)>(h, v, sg);
  }
  // The in-register stages of `next` interleaved with the across stages of `cur`, so that two
  // independent dependency chains are in flight (the FP scheduler otherwise fills up with
  // operations waiting on the shuffle/FMA chains).
  template <int St, int NI, int NA>
  static inline void overlap(V* next, V* cur, const Signs& sg) {
    if constexpr (St < kIntra || (1 << St) < NA) {
      if constexpr (NI > 0 && St < kIntra) intra_stage<St, NI>(next, sg);
      if constexpr ((1 << St) < NA) across_stage<false, NA>(1 << St, cur, sg);
      overlap<St + 1, NI, NA>(next, cur, sg);
    }
  }

  template <bool Scale, int H>
  static inline void store_half(float* x, V* v, float scale) {
#pragma GCC unroll 16
    for (int k = 0; k < H; ++k) {
      if constexpr (Scale) v[k] *= V(scale);
      v[k].store_unaligned(x + k * L);
    }
  }

  // First pass over a contiguous vector of n floats, read from `in` (x itself, or a copy
  // source of the same layout) and written to x: each group of 2^R registers gets the
  // in-register stages and R stages across them. Software-pipelined by half groups: while
  // half b of a group does its in-register stages, half a does its across stages, and then
  // the next group's half a its in-register stages while b does its across stages; the last
  // across stage joins a and b. `pf`, if set, is prefetched alongside.
  template <int R, bool Scale>
  static void first(const float* in, float* x, std::size_t n, float scale, const float* pf, const Signs& sg) {
    if constexpr (R == 0) {
      for (std::size_t i = 0; i < n; i += L) {
        V v[1] = {V::load_unaligned(in + i)};
        overlap<0, 1, 1>(v, v, sg);
        store_half<Scale, 1>(x + i, v, scale);
      }
    } else {
      constexpr int H = 1 << (R - 1);
      constexpr std::size_t G = L << R, HG = G / 2;
      V ab[2 * H], c[H];  // a = ab[0, H), b = ab[H, 2H): the two halves of the current group
      V* const a = ab;
      V* const b = ab + H;
#pragma GCC unroll 16
      for (int k = 0; k < H; ++k) a[k] = V::load_unaligned(in + k * L);
      overlap<0, H, 1>(a, nullptr, sg);  // in-register stages only
      for (std::size_t i = 0; i < n; i += G) {
        if (pf)
          for (std::size_t q = 0; q < G; q += 64 / sizeof(float)) __builtin_prefetch(pf + i + q, 0, 3);
#pragma GCC unroll 16
        for (int k = 0; k < H; ++k) b[k] = V::load_unaligned(in + i + HG + k * L);
        overlap<0, H, H>(b, a, sg);
        const bool more = i + G < n;
        if (more) {
#pragma GCC unroll 16
          for (int k = 0; k < H; ++k) c[k] = V::load_unaligned(in + i + G + k * L);
          overlap<0, H, H>(c, b, sg);
        } else {
          overlap<0, 0, H>(c, b, sg);
        }
        across_stage<false, 2 * H>(H, ab, sg);
        store_half<Scale, 2 * H>(x + i, ab, scale);
        if (more)
#pragma GCC unroll 16
          for (int k = 0; k < H; ++k) a[k] = c[k];
      }
    }
  }

  // R column stages starting at row distance hr: rows j + k*hr (k < 2^R), columns [0, w).
  // Addresses are p + {0, 1, 2, 4} * s and p + {1, 2} * 3s, p + 5s, p + 7s: single x86
  // addressing modes over a few loop-invariant registers (eight separate pointers spill).
  // Loads come from `in` (x, or a source of the same layout: the first pass of an
  // out-of-place transform), stores go to x.
  template <int R, bool Scale>
  static void pass(const float* in, float* x, std::size_t m, std::size_t stride, std::size_t w, std::size_t hr,
                   float scale, const Signs& sg) {
    static_assert(R >= 1 && R <= 3);
    const std::ptrdiff_t from = reinterpret_cast<const char*>(in) - reinterpret_cast<const char*>(x);
    const auto s = static_cast<std::ptrdiff_t>(hr * stride * sizeof(float));
    const std::ptrdiff_t s3 = 3 * s, s5 = 5 * s, s7 = 7 * s;
    for (std::size_t i = 0; i < m; i += hr << R)
      for (std::size_t j = i; j < i + hr; ++j) {
        char* p = reinterpret_cast<char*>(x + j * stride);
        for (std::size_t c = 0; c < w; c += L, p += sizeof(V)) {
          float* const a[8] = {reinterpret_cast<float*>(p),          reinterpret_cast<float*>(p + s),
                               reinterpret_cast<float*>(p + 2 * s),  reinterpret_cast<float*>(p + s3),
                               reinterpret_cast<float*>(p + 4 * s),  reinterpret_cast<float*>(p + s5),
                               reinterpret_cast<float*>(p + 2 * s3), reinterpret_cast<float*>(p + s7)};
          V v[1 << R];
#pragma GCC unroll 8
          for (int k = 0; k < (1 << R); ++k) v[k] = V::load_unaligned(reinterpret_cast<const float*>(
                                                          reinterpret_cast<const char*>(a[k]) + from));
          across<R, true>(v, sg);
#pragma GCC unroll 8
          for (int k = 0; k < (1 << R); ++k) {
            if constexpr (Scale) v[k] *= V(scale);
            v[k].store_unaligned(a[k]);
          }
        }
      }
  }

  template <bool Scale>
  static void pass_r(int r, const float* in, float* x, std::size_t m, std::size_t stride, std::size_t w,
                     std::size_t hr, float scale, const Signs& sg) {
    switch (r) {
      case 1: return pass<1, Scale>(in, x, m, stride, w, hr, scale, sg);
      case 2: return pass<2, Scale>(in, x, m, stride, w, hr, scale, sg);
      default: return pass<3, Scale>(in, x, m, stride, w, hr, scale, sg);
    }
  }

  // Column transform of length m (power of two) on columns [0, w) of an m x stride matrix, in
  // as few passes as the register count allows, the stages spread evenly over them.
  // The first pass reads `in` (x itself, or a source with x's stride).
  static void cols(const float* in, float* x, std::size_t m, std::size_t stride, std::size_t w, float scale) {
    const Signs sg;
    const int stages = std::countr_zero(m);
    const int passes = (stages + kColRadix - 1) / kColRadix;
    std::size_t hr = 1;
    for (int p = 0; p < passes; ++p) {
      const int r = stages * (p + 1) / passes - stages * p / passes;
      const float* from = p == 0 ? in : x;
      if (p == passes - 1 && scale != 1.0f)
        pass_r<true>(r, from, x, m, stride, w, hr, scale, sg);
      else
        pass_r<false>(r, from, x, m, stride, w, hr, scale, sg);
      hr <<= r;
    }
    if (passes == 0 && scale != 1.0f)  // m == 1: only the scale (or the copy)
      for (std::size_t c = 0; c < w; c += L) (V::load_unaligned(in + c) * V(scale)).store_unaligned(x + c);
    else if (passes == 0 && in != x)
      std::copy(in, in + w, x);
  }

  // A later pass inside one row: R stages on registers Step floats apart (a compile-time
  // distance, so all addresses are base + constant).
  template <int R, std::size_t Step, bool Scale>
  static void pass_fixed(float* x, std::size_t n, float scale, const Signs& sg) {
    for (std::size_t i = 0; i < n; i += Step << R)
      for (std::size_t j = i; j < i + Step; j += L) {
        V v[1 << R];
#pragma GCC unroll 16
        for (int k = 0; k < (1 << R); ++k) v[k] = V::load_unaligned(x + j + k * Step);
        // fma(b, -1, a) balances add and FMA pipes when a register is left for the -1.
        across<R, (R >= 3 && (1 << R) < Isa::registers - 1)>(v, sg);
#pragma GCC unroll 16
        for (int k = 0; k < (1 << R); ++k) {
          if constexpr (Scale) v[k] *= V(scale);
          v[k].store_unaligned(x + j + k * Step);
        }
      }
  }

  // Register stages From .. S-1 of a row of L * 2^S floats, in passes of as many stages as
  // the registers allow (measured faster than balanced passes: the last, small pass is cheap).
  // `count` contiguous rows at x.
  template <int From, int S, bool Scale>
  static void tail(float* x, float scale, const Signs& sg, std::size_t count = 1) {
    if constexpr (From < S) {
      // 2^R registers Step floats apart: a span above 16 KiB puts more of them in one L1 set
      // (4 KiB apart) than it has ways, so such passes keep to kRadix.
      constexpr std::size_t span = (L << From << kTailRadix) * sizeof(float);
      constexpr int most = span <= (std::size_t{16} << 10) ? kTailRadix : kRadix;
      constexpr int left = S - From, r = left < most ? left : most;
      pass_fixed<r, (L << From), Scale && From + r == S>(x, count * (L << S), scale, sg);
      tail<From + r, S, Scale>(x, scale, sg, count);
    }
  }

  // Rows of L * 2^S floats. When a row is one first-pass group and rows are contiguous, all
  // rows go in one sweep; otherwise row by row, prefetching the next row during the first pass
  // so that streaming rows overlaps memory and arithmetic.
  // A row longer than 16 KiB (half the smallest L1 these kernels run on) has its stages below
  // kSub done sub-block by sub-block, whose later passes then hit L1, and only the stages above
  // as passes over the whole row: two passes from L2 instead of one per pass. Each element
  // still meets its stages in ascending order (a stage below kSub stays inside a sub-block).
  static constexpr int kSub = std::countr_zero((std::size_t{16} << 10) / sizeof(float) / L);

  template <int S, bool Scale>
  static void rows_s(const float* in, float* x, std::size_t rows, std::size_t stride, float scale, const Signs& sg) {
    constexpr std::size_t n = L << S;
    constexpr int r1 = S < kRadix ? S : kRadix;
    if (S == r1 && stride == n) return first<r1, Scale>(in, x, rows * n, scale, nullptr, sg);
    constexpr int B = S > kSub && kSub > r1 ? kSub : S;
    constexpr std::size_t nb = L << B;
    // Contiguous rows shorter than half the smallest L1 go as many at a time as fill it: one
    // first pass over all of them (one software pipeline's start and drain, not one per row:
    // 5 % of a 2^10 transform on the Zen 5), then the later passes over them, still in L1.
    constexpr std::size_t together = (std::size_t{16} << 10) / sizeof(float) / n;
    if (B == S && together > 1 && stride == n) {
      for (std::size_t row = 0; row < rows; row += together) {
        const std::size_t k = std::min(together, rows - row);
        const float* pf = row + k < rows ? in + (row + k) * n : nullptr;
        first<r1, false>(in + row * n, x + row * n, k * n, scale, pf, sg);
        tail<r1, S, Scale>(x + row * n, scale, sg, k);
      }
      return;
    }
    for (std::size_t row = 0; row < rows; ++row) {
      float* v = x + row * stride;
      const float* u = in + row * stride;
      for (std::size_t b = 0; b < n; b += nb) {
        const float* pf = b + nb < n ? u + b + nb : row + 1 < rows ? u + stride : nullptr;
        first<r1, Scale && S == r1>(u + b, v + b, nb, scale, pf, sg);
        tail<r1, B, Scale && B == S>(v + b, scale, sg);
      }
      tail<B, S, Scale>(v, scale, sg);
    }
  }

  template <int S = 0>
  static void rows_dispatch(int s, const float* in, float* x, std::size_t rows, std::size_t stride, float scale,
                            const Signs& sg) {
    if constexpr ((L << S) <= kBlock) {
      if (s != S) return rows_dispatch<S + 1>(s, in, x, rows, stride, scale, sg);
      if (scale != 1.0f) return rows_s<S, true>(in, x, rows, stride, scale, sg);
      return rows_s<S, false>(in, x, rows, stride, scale, sg);
    }
  }

  // Full transforms of rows of length n (L <= n <= kBlock), read from `in` (x itself, or a
  // source with x's stride: the first pass reads it).
  static void rows(const float* in, float* x, std::size_t rows, std::size_t n, std::size_t stride, float scale) {
    const Signs sg;
    rows_dispatch(std::countr_zero(n / L), in, x, rows, stride, scale, sg);
  }
};

}  // namespace lowp::hadamard::detail
