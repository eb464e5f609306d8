// Internal: gemm_emulated's exact reference step, its fast step and the SIMD tiles.
//
// The fast step computes s = acc + a*b in double (the product is exact) and its TwoSum error
// e. When e == 0, s is the exact sum and rounding it to the accumulator format is the answer.
// When e != 0 the exact sum lies strictly between s and a double neighbour of s, and every
// format value and every rounding midpoint is a double (<= 25 significant bits, exponents far
// inside double's), so none lies between s and the exact sum: rounding s gives the same
// value unless s itself is a format value (or, for the nearest modes, a midpoint). Those rare
// cases, sums beyond the largest finite value (overflow, Inf, NaN) and stochastic rounding
// take the exact 128-bit step.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "gemm_f32_kernels.hpp"
#include "lowp/numerics/bits.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::quant::detail {

// The accumulator format (from a validated Accumulation).
struct EmuFormat {
  int man_bits = 23, emin = -126;
  double max = 0;   // largest finite magnitude
  double tmin = 0;  // 2^emin, the smallest normal magnitude
  Round round = Round::nearest_even;
  std::size_t promote_every = 0;
};
EmuFormat emu_format(const Accumulation& acc);  // lowp::Error when out of range

// part + a*b by the exact definition; IEEE double arithmetic when anything is not finite.
double emu_step_exact(double part, float a, float b, const EmuFormat& f, std::uint32_t rand);

constexpr std::uint64_t kEmuExpMask = 0x7ff0000000000000ull;

// The same result as emu_step_exact for every non-stochastic mode (see the top comment).
inline double emu_step_fast(double part, float a, float b, const EmuFormat& f) {
  const double p = static_cast<double>(a) * static_cast<double>(b);
  const double s = part + p;
  // Beyond the largest finite value (overflow, Inf, NaN) the exact step decides.
  if (!(std::fabs(s) <= f.max)) return emu_step_exact(part, a, b, f, 0);
  // An exact zero: IEEE signs, except that rounding toward -inf makes -0 of any mixed signs.
  if (s == 0) return f.round == Round::toward_neg ? -((-part) - p) : s;
  const double bv = s - part;
  const double e = (part - (s - bv)) + (p - bv);
  const double as = std::fabs(s);
  // The quantum Q = 2^(max(binade, emin) - man_bits) and 1/Q from the exponent field.
  const std::uint64_t eb = f64_bits(std::max(as, f.tmin)) & kEmuExpMask;
  const double q = f64_from_bits(eb - (static_cast<std::uint64_t>(f.man_bits) << 52));
  const double inv_q = f64_from_bits((static_cast<std::uint64_t>(2046 + f.man_bits) << 52) - eb);
  // 0 <= mt < 2^(man_bits + 1) (|s| <= max): truncating to an integer is the floor (and
  // needs no SSE4.1 rounding instruction, which the baseline x86-64 build lacks).
  const double mt = as * inv_q;
  const auto fl_int = static_cast<std::int64_t>(mt);
  const double fl = static_cast<double>(fl_int), frac = mt - fl;  // all exact
  const bool nearest = f.round == Round::nearest_even || f.round == Round::nearest_away;
  if (e != 0 && (frac == 0 || (nearest && frac == 0.5))) return emu_step_exact(part, a, b, f, 0);
  const bool neg = s < 0;
  const bool fl_odd = (fl_int & 1) != 0;
  bool up = false;
  switch (f.round) {
    case Round::nearest_even: up = frac > 0.5 || (frac == 0.5 && fl_odd); break;
    case Round::nearest_away: up = frac >= 0.5; break;
    case Round::toward_zero: break;
    case Round::toward_pos: up = frac != 0 && !neg; break;
    case Round::toward_neg: up = frac != 0 && neg; break;
    case Round::odd: up = frac != 0 && !fl_odd; break;
    case Round::stochastic: return emu_step_exact(part, a, b, f, 0);  // not called for it
  }
  const double mag = (fl + (up ? 1.0 : 0.0)) * q;  // <= max as |s| is: rounding is monotonic
  return neg ? -mag : mag;
}

// A SIMD tile: part[r * nr + l] = the accumulator after `len` steps from +0 (one promotion
// block) of row r of the packed A panel (ap[k * mr + r]) with column l of the packed B panel
// (bp[k * nr + l]). One function per non-stochastic rounding mode (indexed by the Round value),
// and `truncate`, toward zero on a block whose range gemm_emulated has checked: no sum beyond
// the format's largest value and every exact sum a multiple of 2^emin, so none falls below its
// smallest normal.
using EmuTile = void (*)(const float* ap, const float* bp, std::size_t len, const EmuFormat& f, float* part);
// The largest and the smallest nonzero of |x| as bits (sign cleared; lo INT32_MAX when all are
// zero) over `rows` rows `stride` apart of `len` floats, folded into *hi and *lo.
using EmuRangeFn = void (*)(const float* src, std::size_t stride, std::size_t rows, std::size_t len,
                            std::int32_t* hi, std::int32_t* lo);
struct EmuKernel {
  std::size_t mr, nr;
  EmuTile tile[7];
  EmuTile truncate;
  PackRowsFn pack;  // gemm_f32's packing, the panels' layout (up to kGemmKc columns a call)
  EmuRangeFn range;
};
extern const EmuKernel kEmuAvx2, kEmuAvx512;

// Which implementation gemm_emulated runs (tests compare them; `fast` picks the best one).
enum class EmuPath { exact, scalar, avx2, avx512, fast };
void gemm_emulated_path(EmuPath path, const float* A, const float* B, float* C, std::size_t M, std::size_t N,
                        std::size_t K, const Accumulation& acc, int threads = 0);

}  // namespace lowp::quant::detail
