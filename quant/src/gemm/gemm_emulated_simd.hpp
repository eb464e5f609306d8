// Internal: gemm_emulated's SIMD tiles, written once over an xsimd architecture (instantiated
// in gemm_emulated_avx2.cpp / _avx512.cpp). A tile runs one promotion block of MR rows by NR
// columns, NR a multiple of the W double lanes, from A and B packed as doubles
// (ap[k * MR + r], bp[k * NR + l]), and writes the MR x NR accumulator values.
#pragma once
#include <xsimd/xsimd.hpp>

#include "gemm_emulated_kernels.hpp"

namespace lowp::quant::detail {

// Rounding toward zero (MXCSR.RC = 3) for the scope of the object. Both asm statements clobber
// memory, so every load the tile's arithmetic reads stays after the first and every store of
// its results before the second: the arithmetic runs in between, in this rounding mode.
class MxcsrTowardZero {
 public:
  MxcsrTowardZero() {
    asm volatile("stmxcsr %0" : "=m"(saved_));
    const unsigned rz = saved_ | 0x6000u;
    asm volatile("ldmxcsr %0" : : "m"(rz) : "memory");
  }
  ~MxcsrTowardZero() { asm volatile("ldmxcsr %0" : : "m"(saved_) : "memory"); }
  MxcsrTowardZero(const MxcsrTowardZero&) = delete;
  MxcsrTowardZero& operator=(const MxcsrTowardZero&) = delete;

 private:
  unsigned saved_ = 0;
};

template <class Arch, std::size_t MR, std::size_t NR>
struct EmuSimd {
  using D = xsimd::batch<double, Arch>;
  using U = xsimd::batch<std::uint64_t, Arch>;
  static constexpr std::size_t W = D::size, V = NR / W;
  static_assert(NR % W == 0 && MR * NR <= 256);  // run_tiles's buffers

  // The fast step (emu_step_fast) on the MR x NR tile, its MR * NR / W dependency chains
  // interleaved so that they overlap; a lane the fast test does not decide takes emu_step_exact.
  template <Round R>
  static void tile(const double* ap, const double* bp, std::size_t len, const EmuFormat& f, double* part) {
    constexpr bool nearest = R == Round::nearest_even || R == Round::nearest_away;
    // Negation flips the sign bit (xsimd 8.1's avx512f negation is 0 - x, which maps +0 to +0).
    const D sign(-0.0);
    const auto negate = [&sign](D x) { return x ^ sign; };
    const D zero(0.0), one(1.0), half(0.5), tmin(f.tmin), fmax(f.max);
    const U exp_mask(kEmuExpMask), man_shift(static_cast<std::uint64_t>(f.man_bits) << 52),
        inv_base(static_cast<std::uint64_t>(2046 + f.man_bits) << 52);
    D acc[MR][V];
    for (std::size_t r = 0; r < MR; ++r)
      for (std::size_t v = 0; v < V; ++v) acc[r][v] = zero;
    for (std::size_t k = 0; k < len; ++k) {
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t v = 0; v < V; ++v) {
          const D b = D::load_unaligned(bp + k * NR + v * W);
          const D old = acc[r][v];
          const D p = D(ap[k * MR + r]) * b;
          const D s = old + p;
          const D bv = s - old;
          const D e = (old - (s - bv)) + (p - bv);
          const D as = xsimd::abs(s);
          const U eb = xsimd::bitwise_cast<U>(xsimd::max(as, tmin)) & exp_mask;
          const D q = xsimd::bitwise_cast<D>(eb - man_shift);
          const D inv_q = xsimd::bitwise_cast<D>(inv_base - eb);
          const D mt = as * inv_q, fl = xsimd::floor(mt), frac = mt - fl;
          const auto neg = s < zero;
          xsimd::batch_bool<double, Arch> up;
          if constexpr (R == Round::nearest_even) {
            const D h = fl * half;
            up = (frac > half) | ((frac == half) & (xsimd::floor(h) != h));
          } else if constexpr (R == Round::nearest_away) {
            up = frac >= half;
          } else if constexpr (R == Round::toward_pos) {
            up = (frac != zero) & !neg;
          } else if constexpr (R == Round::toward_neg) {
            up = (frac != zero) & neg;
          } else if constexpr (R == Round::odd) {
            const D h = fl * half;
            up = (frac != zero) & (xsimd::floor(h) == h);
          }
          D mag;
          if constexpr (R == Round::toward_zero)
            mag = fl * q;
          else
            mag = (fl + xsimd::select(up, one, zero)) * q;
          // s = +-0 gives mag = 0, so this is s itself: IEEE zero signs, except that rounding
          // toward -inf makes -0 of any mixed signs.
          D res = mag | (s & sign);
          if constexpr (R == Round::toward_neg) res = xsimd::select(s == zero, negate(negate(old) - p), res);
          // Beyond the largest finite value (overflow, Inf, NaN) the exact step decides.
          const auto big = !(as <= fmax);
          auto slow = big | ((e != zero) & (frac == zero));
          if constexpr (nearest) slow = big | ((e != zero) & ((frac == zero) | (frac == half)));
          if (xsimd::any(slow)) {
            alignas(64) double o[W], out[W];
            old.store_aligned(o);
            res.store_aligned(out);
            for (std::size_t l = 0; l < W; ++l)
              if (slow.get(l))
                out[l] = emu_step_exact(o[l], static_cast<float>(ap[k * MR + r]),
                                        static_cast<float>(bp[k * NR + v * W + l]), f, 0);
            res = D::load_aligned(out);
          }
          acc[r][v] = res;
        }
    }
    for (std::size_t r = 0; r < MR; ++r)
      for (std::size_t v = 0; v < V; ++v) acc[r][v].store_unaligned(part + r * NR + v * W);
  }

  // Rounding toward zero on a block whose range is proven (see truncation_safe): each step is
  // acc <- fma(a, b, acc) rounded toward zero in double, then its low 52 - man_bits mantissa
  // bits cleared. Truncating toward zero to the double grid and then to the coarser format
  // grid inside it is truncating once, so this is the format's rounding of the exact sum.
  static void tile_truncate(const double* ap, const double* bp, std::size_t len, const EmuFormat& f,
                            double* part) {
    const D keep = xsimd::bitwise_cast<D>(U(~((std::uint64_t{1} << (52 - f.man_bits)) - 1)));
    D acc[MR][V];
    for (std::size_t r = 0; r < MR; ++r)
      for (std::size_t v = 0; v < V; ++v) acc[r][v] = D(0.0);
    {
      const MxcsrTowardZero rz;
      for (std::size_t k = 0; k < len; ++k) {
        D b[V];
        for (std::size_t v = 0; v < V; ++v) b[v] = D::load_unaligned(bp + k * NR + v * W);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) {
          const D a(ap[k * MR + r]);
          for (std::size_t v = 0; v < V; ++v) acc[r][v] = xsimd::fma(a, b[v], acc[r][v]) & keep;
        }
      }
      for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t v = 0; v < V; ++v) acc[r][v].store_unaligned(part + r * NR + v * W);
    }
  }

  static constexpr EmuKernel table() {
    return {MR,
            NR,
            {&tile<Round::nearest_even>, &tile<Round::nearest_away>, &tile<Round::toward_zero>,
             &tile<Round::toward_pos>, &tile<Round::toward_neg>, nullptr, &tile<Round::odd>},
            &tile_truncate};
  }
};

}  // namespace lowp::quant::detail
