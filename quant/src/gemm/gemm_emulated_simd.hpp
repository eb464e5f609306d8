// Internal: gemm_emulated's fast step (emu_step_fast) on W double lanes at once, written once
// over an xsimd architecture (instantiated in gemm_emulated_avx2.cpp / _avx512.cpp). A tile
// runs MR independent rows so that their dependency chains overlap; a lane whose step is not
// decided by the fast test takes emu_step_exact.
#pragma once
#include <xsimd/xsimd.hpp>

#include "gemm_emulated_kernels.hpp"

namespace lowp::quant::detail {

template <class Arch, std::size_t MR>
struct EmuSimd {
  using D = xsimd::batch<double, Arch>;
  using U = xsimd::batch<std::uint64_t, Arch>;
  static constexpr std::size_t W = D::size;

  template <Round R>
  static void tile(const float* const* a, const double* bp, std::size_t K, const EmuFormat& f, float* out) {
    constexpr bool nearest = R == Round::nearest_even || R == Round::nearest_away;
    // Negation flips the sign bit (xsimd 8.1's avx512f negation is 0 - x, which maps +0 to +0).
    const D sign(-0.0);
    const auto negate = [&sign](D x) { return x ^ sign; };
    const D zero(0.0), one(1.0), half(0.5), tmin(f.tmin), fmax(f.max);
    const U exp_mask(kEmuExpMask), man_shift(static_cast<std::uint64_t>(f.man_bits) << 52),
        inv_base(static_cast<std::uint64_t>(2046 + f.man_bits) << 52);
    D part[MR];
    float total[MR][W] = {};
    for (std::size_t r = 0; r < MR; ++r) part[r] = zero;
    std::size_t count = 0;
    for (std::size_t k = 0; k < K; ++k) {
      const D b = D::load_unaligned(bp + k * W);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) {
        const D old = part[r];
        const D p = D(static_cast<double>(a[r][k])) * b;
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
          alignas(64) double o[W], v[W];
          old.store_aligned(o);
          res.store_aligned(v);
          for (std::size_t l = 0; l < W; ++l)
            if (slow.get(l)) v[l] = emu_step_exact(o[l], a[r][k], static_cast<float>(bp[k * W + l]), f, 0);
          res = D::load_aligned(v);
        }
        part[r] = res;
      }
      if (f.promote_every > 0 && ++count == f.promote_every) {
        for (std::size_t r = 0; r < MR; ++r) {
          alignas(64) double o[W];
          part[r].store_aligned(o);
          for (std::size_t l = 0; l < W; ++l) total[r][l] += static_cast<float>(o[l]);
          part[r] = zero;
        }
        count = 0;
      }
    }
    for (std::size_t r = 0; r < MR; ++r) {
      alignas(64) double o[W];
      part[r].store_aligned(o);
      for (std::size_t l = 0; l < W; ++l)
        out[r * W + l] = f.promote_every > 0
                             ? (count > 0 ? total[r][l] + static_cast<float>(o[l]) : total[r][l])
                             : static_cast<float>(o[l]);
    }
  }

  static constexpr EmuKernel table() {
    return {MR,
            W,
            {&tile<Round::nearest_even>, &tile<Round::nearest_away>, &tile<Round::toward_zero>,
             &tile<Round::toward_pos>, &tile<Round::toward_neg>, nullptr, &tile<Round::odd>}};
  }
};

}  // namespace lowp::quant::detail
