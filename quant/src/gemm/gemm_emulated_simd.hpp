// Internal: gemm_emulated's SIMD tiles, written once over an xsimd architecture (instantiated
// in gemm_emulated_avx2.cpp / _avx512.cpp). A tile runs one promotion block of MR rows by NR
// columns from the packed operand panels (ap[k * MR + r], bp[k * NR + l]) and writes the
// MR x NR accumulator values (format values, so floats exactly). Fma::fma(x, y, z) must be the
// fused x * y + z (one rounding), which the truncating tile's exactness rests on.
#pragma once
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <bit>
#include <climits>

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

template <class Arch, class Fma, std::size_t MR, std::size_t NR>
struct EmuSimd {
  using D = xsimd::batch<double, Arch>;
  using U = xsimd::batch<std::uint64_t, Arch>;
  using F = xsimd::batch<float, Arch>;
  using U32 = xsimd::batch<std::uint32_t, Arch>;
  static constexpr std::size_t W = D::size, V = NR / W, WF = F::size, VF = NR / WF;
  static_assert(NR % WF == 0 && MR * NR <= 256 && MR <= kMaxWidth && NR <= kMaxWidth);  // run_tiles's buffers
  // The fast step's column groups run two at a time (2 MR dependency chains interleaved).
  static constexpr std::size_t VG = V % 2 == 0 ? 2 : 1;

  // The fast step (emu_step_fast) in double lanes, VG column groups of W lanes by MR rows at a
  // time so that their dependency chains overlap; a lane the fast test does not decide takes
  // emu_step_exact.
  template <Round R>
  static void tile(const float* ap, const float* bp, std::size_t len, const EmuFormat& f, float* part) {
    constexpr bool nearest = R == Round::nearest_even || R == Round::nearest_away;
    // Negation flips the sign bit (xsimd 8.1's avx512f negation is 0 - x, which maps +0 to +0).
    const D sign(-0.0);
    const auto negate = [&sign](D x) { return x ^ sign; };
    const D zero(0.0), one(1.0), half(0.5), tmin(f.tmin), fmax(f.max);
    const U exp_mask(kEmuExpMask), man_shift(static_cast<std::uint64_t>(f.man_bits) << 52),
        inv_base(static_cast<std::uint64_t>(2046 + f.man_bits) << 52);
    for (std::size_t v0 = 0; v0 < V; v0 += VG) {
      D acc[MR][VG];
      for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t v = 0; v < VG; ++v) acc[r][v] = zero;
      for (std::size_t k = 0; k < len; ++k) {
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r)
          for (std::size_t v = 0; v < VG; ++v) {
            const float* bk = bp + k * NR + (v0 + v) * W;
            const D b = D::load_unaligned(bk);
            const D old = acc[r][v];
            const D p = D(static_cast<double>(ap[k * MR + r])) * b;
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
                if (slow.get(l)) out[l] = emu_step_exact(o[l], ap[k * MR + r], bk[l], f, 0);
              res = D::load_aligned(out);
            }
            acc[r][v] = res;
          }
      }
      for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t v = 0; v < VG; ++v) {
          alignas(64) double o[W];
          acc[r][v].store_aligned(o);
          for (std::size_t l = 0; l < W; ++l) part[r * NR + (v0 + v) * W + l] = static_cast<float>(o[l]);
        }
    }
  }

  // Rounding toward zero on a block whose range is proven (see EmuTile): each step is
  // acc <- fma(a, b, acc) in float32 rounded toward zero, then its low 23 - man_bits mantissa
  // bits cleared. The fma rounds the exact sum once; truncating toward zero to the float grid
  // and then to the coarser format grid inside it is truncating once, so this is the format's
  // rounding of the exact sum (every sum is a normal float: a multiple of 2^emin, at most max).
  static void tile_truncate(const float* ap, const float* bp, std::size_t len, const EmuFormat& f, float* part) {
    const F keep = xsimd::bitwise_cast<F>(U32(~((std::uint32_t{1} << (23 - f.man_bits)) - 1)));
    F acc[MR][VF];
    for (std::size_t r = 0; r < MR; ++r)
      for (std::size_t v = 0; v < VF; ++v) acc[r][v] = F(0.0f);
    {
      const MxcsrTowardZero rz;
      for (std::size_t k = 0; k < len; ++k) {
        F b[VF];
        for (std::size_t v = 0; v < VF; ++v) b[v] = F::load_unaligned(bp + k * NR + v * WF);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) {
          const F a(ap[k * MR + r]);
          for (std::size_t v = 0; v < VF; ++v) acc[r][v] = Fma::fma(a, b[v], acc[r][v]) & keep;
        }
      }
      for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t v = 0; v < VF; ++v) acc[r][v].store_unaligned(part + r * NR + v * WF);
    }
  }

  // Signed 32-bit lanes: the bits with the sign cleared are non-negative.
  static void range(const float* src, std::size_t stride, std::size_t rows, std::size_t len, std::int32_t* hi,
                    std::int32_t* lo) {
    using I = xsimd::batch<std::int32_t, Arch>;
    constexpr std::size_t WI = I::size;
    const I magnitude(0x7fffffff), none(INT32_MAX), zero(0);
    I h(*hi), l(*lo);
    std::int32_t hs = *hi, ls = *lo;
    for (std::size_t r = 0; r < rows; ++r) {
      const auto* row = reinterpret_cast<const std::int32_t*>(src + r * stride);
      std::size_t k = 0;
      for (; k + WI <= len; k += WI) {
        const I u = I::load_unaligned(row + k) & magnitude;
        h = xsimd::max(h, u);
        l = xsimd::min(l, xsimd::select(u == zero, none, u));
      }
      for (; k < len; ++k) {
        const std::int32_t u = row[k] & 0x7fffffff;
        hs = std::max(hs, u);
        ls = std::min(ls, u == 0 ? INT32_MAX : u);
      }
    }
    alignas(64) std::int32_t hv[WI], lv[WI];
    h.store_aligned(hv);
    l.store_aligned(lv);
    for (std::size_t i = 0; i < WI; ++i) hs = std::max(hs, hv[i]), ls = std::min(ls, lv[i]);
    *hi = hs, *lo = ls;
  }

  static constexpr EmuKernel table(PackRowsFn pack) {
    return {MR,
            NR,
            {&tile<Round::nearest_even>, &tile<Round::nearest_away>, &tile<Round::toward_zero>,
             &tile<Round::toward_pos>, &tile<Round::toward_neg>, nullptr, &tile<Round::odd>},
            &tile_truncate,
            pack,
            &range};
  }
};

}  // namespace lowp::quant::detail
