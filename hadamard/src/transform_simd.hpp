// Internal: the dense +-1 product of transform_kernels.hpp for one vector type V (an xsimd
// batch, or the one-float Lane below), processing W columns per table entry.
//
// Operation order, identical for every V: each table entry is ((x_j0 +- x_j0+1) +- x_j0+2) +-
// x_j0+3 or the exact negation of one, then each output is ((e_0 + e_1) + e_2) + ... over the
// groups in order (across passes too), then one multiply by the scale. Half of the
// accumulating additions are written as fma(e, 1, acc), which rounds exactly like acc + e.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transform_kernels.hpp"

namespace lowp::hadamard::detail {

// One float with the batch interface the template uses (the scalar reference).
struct Lane {
  static constexpr std::size_t size = 1;
  float v;
  Lane() = default;
  explicit Lane(float f) : v(f) {}
  static Lane load_aligned(const float* p) { return Lane(*p); }
  static Lane load_unaligned(const float* p) { return Lane(*p); }
  void store_aligned(float* p) const { *p = v; }
  void store_unaligned(float* p) const { *p = v; }
  friend Lane operator+(Lane a, Lane b) { return Lane(a.v + b.v); }
  friend Lane operator-(Lane a, Lane b) { return Lane(a.v - b.v); }
  friend Lane operator*(Lane a, Lane b) { return Lane(a.v * b.v); }
  friend Lane operator^(Lane a, Lane b) {
    return Lane(std::bit_cast<float>(std::bit_cast<std::uint32_t>(a.v) ^
                                     std::bit_cast<std::uint32_t>(b.v)));
  }
  // Only ever called with b = 1, where a*b is exact: one rounding, as a fused multiply-add.
  friend Lane fma(Lane a, Lane b, Lane c) { return Lane(a.v * b.v + c.v); }
};

template <class V, std::size_t W = kTileLanes>
struct SignSimd {
  static constexpr std::size_t L = V::size;
  static constexpr std::size_t U = W / L;  // vectors per table entry
  static_assert(U * L == W && (W % 16 == 0 || 16 % W == 0));
  // Plan offsets are pattern * 16; the entry starts pattern * W floats into the group.
  static constexpr std::size_t entry(std::uint32_t off) {
    return W >= 16 ? off * (W / 16) : off / (16 / W);
  }
  static constexpr std::size_t kSlots = kGroupSlots;

  static inline V flip(V v) { return v ^ V(-0.0f); }  // exact negation, also of 0 and NaN

  // The 16 signed sums of one group of four input rows at x (rows ld apart), into tab.
  // Entries with x_0's sign + are built in registers, ((x0 +- x1) +- x2) +- x3; the others are
  // their exact negations (p and p ^ 15 have opposite signs everywhere).
  static inline void build(const float* x, std::size_t ld, float* tab) {
#pragma GCC unroll 4
    for (std::size_t u = 0; u < U; ++u) {
      const V x0 = V::load_unaligned(x + u * L), x1 = V::load_unaligned(x + ld + u * L);
      const V x2 = V::load_unaligned(x + 2 * ld + u * L),
              x3 = V::load_unaligned(x + 3 * ld + u * L);
      V h[8];
      h[0] = x0 + x1;  // h[q]: bit 0 of the pattern (x0's sign) clear, bits 1..3 = q
      h[1] = x0 - x1;
      h[2] = h[0] - x2;
      h[3] = h[1] - x2;
      h[0] = h[0] + x2;
      h[1] = h[1] + x2;
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        h[q + 4] = h[q] - x3;
        h[q] = h[q] + x3;
      }
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        h[q].store_aligned(tab + (2 * q) * W + u * L);
        flip(h[q]).store_aligned(tab + (15 - 2 * q) * W + u * L);
      }
    }
  }

  // Output rows [i, i + RR), groups [t0, t1) of the current pass: continue the partial sums
  // in `part` (unless t0 = 0), then store them there again or, after the last group, scaled
  // into x.
  template <int RR>
  static inline void outputs(const SignPlan& p, int i, int t0, int t1, float* x, std::size_t ld,
                             V sc, const float* table, float* part) {
    const V one(1.0f);
    const std::size_t m = static_cast<std::size_t>(p.m);
    const std::uint8_t* off = p.offset.data() + static_cast<std::size_t>(t0) * m + i;
    V acc[RR][U];
    int t = t0;
    if (t0 == 0) {
#pragma GCC unroll 8
      for (int k = 0; k < RR; ++k)
#pragma GCC unroll 4
        for (std::size_t u = 0; u < U; ++u)
          acc[k][u] = V::load_aligned(table + entry(off[k]) + u * L);
      ++t;
      off += m;
      table += kSlots * W;
    } else {
#pragma GCC unroll 8
      for (int k = 0; k < RR; ++k)
#pragma GCC unroll 4
        for (std::size_t u = 0; u < U; ++u) acc[k][u] = V::load_aligned(part + (i + k) * W + u * L);
    }
    for (; t < t1; ++t, off += m, table += kSlots * W) {
      // The offsets of this group's RR rows, read four at a time as (x86: little-endian) words.
      std::uint32_t words[RR / 4];
      std::memcpy(words, off, sizeof words);
#pragma GCC unroll 8
      for (int k = 0; k < RR; ++k) {
        const float* e = table + entry(words[k / 4] >> (8 * (k % 4)) & 0xff);
#pragma GCC unroll 4
        for (std::size_t u = 0; u < U; ++u) {
          if (k & 1)  // rounds like the addition; spreads the work over the FMA pipes
            acc[k][u] = fma(V::load_aligned(e + u * L), one, acc[k][u]);
          else
            acc[k][u] = acc[k][u] + V::load_aligned(e + u * L);
        }
      }
    }
    if (t1 == p.groups) {
#pragma GCC unroll 8
      for (int k = 0; k < RR; ++k)
#pragma GCC unroll 4
        for (std::size_t u = 0; u < U; ++u)
          (acc[k][u] * sc).store_unaligned(x + (i + k) * ld + u * L);
    } else {
#pragma GCC unroll 8
      for (int k = 0; k < RR; ++k)
#pragma GCC unroll 4
        for (std::size_t u = 0; u < U; ++u) acc[k][u].store_aligned(part + (i + k) * W + u * L);
    }
  }

  // Columns [c, c + W). The tables of a pass are built from rows that no earlier pass has
  // overwritten: outputs go to x only in the last pass, after all tables were read from x.
  static void tile(const SignPlan& p, float* x, std::size_t ld, float scale, float* scratch) {
    float* part = scratch + kPassGroups * kSlots * W;
    const V sc(scale);
    for (int q = 0; q < p.passes(); ++q) {
      const int t0 = p.pass_begin[q], t1 = p.pass_begin[q + 1];
      for (int t = t0; t < t1; ++t) build(x + t * kGroup * ld, ld, scratch + (t - t0) * kSlots * W);
      int i = 0;
      for (; i + 8 <= p.m; i += 8) outputs<8>(p, i, t0, t1, x, ld, sc, scratch, part);
      for (; i < p.m; i += 4) outputs<4>(p, i, t0, t1, x, ld, sc, scratch, part);  // m = 4k
    }
  }

  static void run(const SignPlan& p, float* x, std::size_t ld, std::size_t width, float scale,
                  float* scratch) {
    for (std::size_t c = 0; c < width; c += W) tile(p, x + c, ld, scale, scratch);
  }
};

}  // namespace lowp::hadamard::detail
