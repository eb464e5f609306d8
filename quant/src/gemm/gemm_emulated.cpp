// GEMM with an emulated limited-precision floating accumulator (see gemm.hpp).
//
// The definition: each addition acc + a*b is done exactly in a 128-bit integer window and
// rounded once to the accumulator format: the product of two floats is exact in 48 bits, the
// accumulator holds at most 24, and when their exponents are too far apart for the window,
// the smaller term only matters as a sticky bit far below the rounding position. This exact
// step is the reference; gemm_emulated_kernels.hpp has the fast step that agrees with it.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gemm_emulated_kernels.hpp"
#include "lowp/numerics/bits.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::quant::detail {
namespace {

using u128 = unsigned __int128;

// (-1)^neg * sig * 2^exp, exp the exponent of the last bit; sig = 0 is a (signed) zero.
struct Term {
  bool neg = false;
  std::uint64_t sig = 0;
  int exp = 0;
};

Term exact_product(float a, float b) {
  const bool neg = std::signbit(a) != std::signbit(b);
  if (a == 0.0f || b == 0.0f) return {neg, 0, 0};
  const Unpacked ua = unpack(a), ub = unpack(b);
  return {neg, ua.sig * ub.sig, ua.exp + ub.exp - 46};
}

Term term_of(double x) {
  if (x == 0.0) return {std::signbit(x), 0, 0};
  const Unpacked u = unpack(x);
  return {u.negative, u.sig, u.exp - 52};
}

int top_of(const Term& t) { return t.exp + (64 - std::countl_zero(t.sig)); }  // above the top bit

// The magnitude v * 2^lsb (v != 0, sign `neg`) rounded to the format, as a double.
double round_to_format(u128 v, int lsb, bool neg, const EmuFormat& f, std::uint32_t rand) {
  const int bits = 128 - (static_cast<std::uint64_t>(v >> 64)
                              ? std::countl_zero(static_cast<std::uint64_t>(v >> 64))
                              : 64 + std::countl_zero(static_cast<std::uint64_t>(v)));
  const int binade = lsb + bits - 1;
  const int q = std::max(binade, f.emin) - f.man_bits;  // exponent of the quantum
  const int shift = q - lsb;
  double mag;
  if (shift <= 0) {
    mag = std::ldexp(static_cast<double>(v), lsb);  // at most man_bits + 1 bits: exact
  } else {
    const u128 quot = shift >= 128 ? 0 : v >> shift;
    const u128 rem = shift >= 128 ? v : v & ((u128{1} << shift) - 1);
    bool up = false;
    if (rem != 0) {
      const u128 half = shift > 128 ? 0 : u128{1} << (shift - 1);  // 0: beyond v (< 2^122)
      const int cmp_half = shift > 128 || rem < half ? -1 : (rem == half ? 0 : 1);
      const bool odd = (quot & 1) != 0;  // man_bits >= 1: the code's parity
      switch (f.round) {
        case Round::nearest_even: up = cmp_half > 0 || (cmp_half == 0 && odd); break;
        case Round::nearest_away: up = cmp_half >= 0; break;
        case Round::toward_zero: up = false; break;
        case Round::toward_pos: up = !neg; break;
        case Round::toward_neg: up = neg; break;
        case Round::stochastic: {
          // floor(fraction * 2^32), the fraction being rem / 2^shift.
          const std::uint32_t frac =
              shift >= 32
                  ? (shift - 32 >= 128 ? 0u : static_cast<std::uint32_t>(rem >> (shift - 32)))
                  : static_cast<std::uint32_t>(rem << (32 - shift));
          up = std::uint64_t{frac} + rand >= (std::uint64_t{1} << 32);
          break;
        }
        case Round::odd: up = !odd; break;
      }
    }
    mag = std::ldexp(static_cast<double>(quot + (up ? 1 : 0)), q);
  }
  if (mag > f.max)
    mag = overflows_to_infinity(f.round, neg) ? std::numeric_limits<double>::infinity() : f.max;
  return neg ? -mag : mag;
}

// acc + p, exactly, rounded to the format. Both finite.
double add_round(const Term& x, const Term& y, const EmuFormat& f, std::uint32_t rand) {
  if (x.sig == 0 && y.sig == 0) {  // IEEE signs of a zero sum
    const bool neg = (x.neg && y.neg) || ((x.neg || y.neg) && f.round == Round::toward_neg);
    return neg ? -0.0 : 0.0;
  }
  // A 121-bit window below the higher top bit: the larger term (at most 53 bits) fits; the
  // other one is exact too unless it lies entirely 67+ bits lower. Then its bits, all below
  // the rounding position (95+ bits above the window's end), make the sum inexact and only
  // that matters: it becomes a sticky 1 at the last place, which keeps every rounding
  // decision (ties, directions, the 32 bits of stochastic rounding) unchanged.
  const int top = std::max(x.sig ? top_of(x) : INT32_MIN, y.sig ? top_of(y) : INT32_MIN);
  const int lsb = top - 121;
  const auto align = [lsb](const Term& t) -> u128 {
    if (t.sig == 0) return 0;
    if (t.exp >= lsb) return u128{t.sig} << (t.exp - lsb);
    const int s = lsb - t.exp;
    const std::uint64_t kept = s >= 64 ? 0 : t.sig >> s;
    return u128{kept | 1};
  };
  const u128 vx = align(x), vy = align(y);
  u128 v;
  bool neg;
  if (x.neg == y.neg) {
    v = vx + vy;
    neg = x.neg;
  } else if (vx >= vy) {
    v = vx - vy;
    neg = x.neg;
  } else {
    v = vy - vx;
    neg = y.neg;
  }
  if (v == 0) return f.round == Round::toward_neg ? -0.0 : 0.0;  // exact cancellation
  return round_to_format(v, lsb, neg, f, rand);
}

// One element's dot product of a and b (K floats each) with promotion; step(part, k) is the
// addition of product k.
template <class Step>
float emu_dot(std::size_t K, std::size_t promote_every, Step&& step) {
  float total = 0.0f;  // the float32 total that promotion adds into
  double part = 0.0;   // the accumulator, exactly representable in a double (and a float)
  std::size_t count = 0;
  for (std::size_t k = 0; k < K; ++k) {
    part = step(part, k);
    if (promote_every > 0 && ++count == promote_every) {
      total += static_cast<float>(part);
      part = 0.0;
      count = 0;
    }
  }
  return promote_every > 0 ? (count > 0 ? total + static_cast<float>(part) : total)
                           : static_cast<float>(part);
}

// L dot products of row a with rows b[0..L) by the scalar fast step, interleaved so that the
// L dependency chains overlap; the same additions and promotions as emu_dot for each.
template <std::size_t L>
void emu_dots_fast(const float* a, const float* const* b, std::size_t K, const EmuFormat& f, float* out) {
  float total[L] = {};
  double part[L] = {};
  std::size_t count = 0;
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t l = 0; l < L; ++l) part[l] = emu_step_fast(part[l], a[k], b[l][k], f);
    if (f.promote_every > 0 && ++count == f.promote_every) {
      for (std::size_t l = 0; l < L; ++l) {
        total[l] += static_cast<float>(part[l]);
        part[l] = 0.0;
      }
      count = 0;
    }
  }
  for (std::size_t l = 0; l < L; ++l)
    out[l] = f.promote_every > 0 ? (count > 0 ? total[l] + static_cast<float>(part[l]) : total[l])
                                 : static_cast<float>(part[l]);
}

const EmuKernel* simd_kernel(EmuPath path) {
  if (path == EmuPath::fast)
    path = best_isa() == Isa::avx512 ? EmuPath::avx512
           : best_isa() == Isa::avx2 ? EmuPath::avx2
                                     : EmuPath::scalar;
  if (path == EmuPath::avx512 && isa_available(Isa::avx512)) return &kEmuAvx512;
  if (path == EmuPath::avx2 && isa_available(Isa::avx2)) return &kEmuAvx2;
  if (path == EmuPath::avx512 || path == EmuPath::avx2)
    throw Error("gemm_emulated: the instruction set asked for is not available on this CPU");
  return nullptr;
}

// The range of one panel's operands over one promotion block: their largest magnitude (infinite
// when one is not finite) and the smallest unit in the last place of the nonzero ones, 2^min_ulp_exp.
struct BlockRange {
  double max_abs = 0;
  int min_ulp_exp = INT_MAX;
};

// The range of `rows` float rows (`stride` apart) over `len` columns, from their bits: with the
// sign cleared, a larger magnitude has larger bits, so two integer reductions (kern.range) find
// the largest magnitude and the smallest nonzero one, whose exponent field E gives the smallest
// ulp, 2^(max(E, 1) - 150); bits from 0x7f800000 on are Inf and NaN.
BlockRange block_range(const EmuKernel& kern, const float* src, std::size_t stride, std::size_t rows,
                       std::size_t len) {
  std::int32_t hi = 0, lo = INT32_MAX;
  kern.range(src, stride, rows, len, &hi, &lo);
  if (hi >= 0x7f800000) return {std::numeric_limits<double>::infinity(), INT_MIN};
  if (hi == 0) return {};
  return {static_cast<double>(std::bit_cast<float>(hi)), std::max(lo >> 23, 1) - 150};
}

// Whether the `truncate` tile may run a block: no partial sum can pass the format's largest
// value (each is at most the sum of the magnitudes of its products, bounded here with a factor
// 2 to spare for this product's own rounding), and every product, so every exact sum and every
// truncation of one, is a multiple of 2^(ulp exponents) >= 2^emin: a nonzero sum is then never
// below the format's smallest normal, where the mantissa mask would not be its rounding.
bool truncation_safe(const BlockRange& a, const BlockRange& b, std::size_t len, const EmuFormat& f) {
  if (f.round != Round::toward_zero) return false;
  if (a.min_ulp_exp == INT_MAX || b.min_ulp_exp == INT_MAX) return true;  // every product is 0
  return a.max_abs * b.max_abs * static_cast<double>(len) <= f.max / 2 &&
         a.min_ulp_exp + b.min_ulp_exp >= f.emin;
}

// C (M x N) with the tiles of `kern`: A packed in panels of mr rows, B in panels of nr columns,
// each tile one A panel by one B panel, run one promotion block at a time and added into its
// float32 totals.
void run_tiles(const EmuKernel& kern, const float* A, const float* B, float* C, std::size_t M,
               std::size_t N, std::size_t K, const EmuFormat& f, int threads) {
  const std::size_t mr = kern.mr, nr = kern.nr;
  const std::size_t panels = (N + nr - 1) / nr, row_blocks = (M + mr - 1) / mr;
  const std::size_t L = f.promote_every > 0 ? std::min(f.promote_every, K) : K, blocks = (K + L - 1) / L;
  std::vector<float> ap(row_blocks * K * mr), bp(panels * K * nr);
  std::vector<BlockRange> a_range(row_blocks * blocks), b_range(panels * blocks);
  // Both operands packed as gemm_f32 packs its slivers (rows past M or N zero), kGemmKc columns
  // a call, with the range of each panel's promotion blocks.
  const auto pack = [&](const float* src, std::size_t count, std::size_t width, std::size_t panel, float* dst,
                        BlockRange* range) {
    const std::size_t i0 = panel * width, n = std::min(width, count - i0);
    const void* rows[kMaxWidth];
    for (std::size_t k0 = 0; k0 < K; k0 += kGemmKc) {
      for (std::size_t r = 0; r < n; ++r) rows[r] = src + (i0 + r) * K + k0;
      kern.pack(rows, n, width, std::min(kGemmKc, K - k0), dst + k0 * width);
    }
    for (std::size_t b = 0; b < blocks; ++b) range[b] = block_range(kern, src + i0 * K + b * L, K, n, std::min(L, K - b * L));
  };
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static) nowait
    for (std::ptrdiff_t g = 0; g < static_cast<std::ptrdiff_t>(panels); ++g)
      pack(B, N, nr, static_cast<std::size_t>(g), bp.data() + static_cast<std::size_t>(g) * K * nr,
           b_range.data() + static_cast<std::size_t>(g) * blocks);
#pragma omp for schedule(static)
    for (std::ptrdiff_t g = 0; g < static_cast<std::ptrdiff_t>(row_blocks); ++g)
      pack(A, M, mr, static_cast<std::size_t>(g), ap.data() + static_cast<std::size_t>(g) * K * mr,
           a_range.data() + static_cast<std::size_t>(g) * blocks);
  }
  const EmuTile tile = kern.tile[static_cast<int>(f.round)];
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(panels * row_blocks); ++t) {
    const std::size_t g = static_cast<std::size_t>(t) % panels, rb = static_cast<std::size_t>(t) / panels;
    float part[256], total[256];
    std::fill_n(total, mr * nr, 0.0f);
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t k0 = b * L, len = std::min(L, K - k0);
      const bool safe = truncation_safe(a_range[rb * blocks + b], b_range[g * blocks + b], len, f);
      (safe ? kern.truncate : tile)(ap.data() + rb * K * mr + k0 * mr, bp.data() + g * K * nr + k0 * nr, len, f,
                                    part);
      if (f.promote_every > 0)
        for (std::size_t i = 0; i < mr * nr; ++i) total[i] += part[i];
    }
    const float* out = f.promote_every > 0 ? total : part;
    const std::size_t i0 = rb * mr, cols = std::min(nr, N - g * nr);
    for (std::size_t r = 0; r < mr && i0 + r < M; ++r)
      std::copy_n(out + r * nr, cols, C + (i0 + r) * N + g * nr);
  }
}

}  // namespace

EmuFormat emu_format(const Accumulation& acc) {
  if (acc.man_bits < 1 || acc.man_bits > 23)
    throw Error("gemm_emulated: man_bits = " + std::to_string(acc.man_bits) +
                " is outside [1, 23]");
  if (acc.exp_bits < 2 || acc.exp_bits > 8)
    throw Error("gemm_emulated: exp_bits = " + std::to_string(acc.exp_bits) + " is outside [2, 8]");
  EmuFormat f;
  f.man_bits = acc.man_bits;
  const int emax = (1 << (acc.exp_bits - 1)) - 1;
  f.emin = 1 - emax;
  f.max = std::ldexp(2.0 - std::ldexp(1.0, -acc.man_bits), emax);
  f.tmin = std::ldexp(1.0, f.emin);
  f.round = acc.round;
  f.promote_every = acc.promote_every;
  return f;
}

double emu_step_exact(double part, float a, float b, const EmuFormat& f, std::uint32_t rand) {
  if (!std::isfinite(part) || !std::isfinite(a) || !std::isfinite(b))
    return part + static_cast<double>(a) * static_cast<double>(b);  // IEEE Inf / NaN rules
  return add_round(term_of(part), exact_product(a, b), f, rand);
}

void gemm_emulated_path(EmuPath path, const float* A, const float* B, float* C, std::size_t M,
                        std::size_t N, std::size_t K, const Accumulation& acc, int threads) {
  const EmuFormat f = emu_format(acc);
  if (M == 0 || N == 0) return;
  if (!C || (K > 0 && (!A || !B)))
    throw Error(std::string("gemm_emulated: ") + (!C ? "C" : !A ? "A" : "B") + " is null");
  if (K == 0) {
    std::fill(C, C + M * N, 0.0f);
    return;
  }
  // Stochastic rounding draws from the exact remainder: always the exact step.
  if (acc.round == Round::stochastic) path = EmuPath::exact;
  const EmuKernel* kern = path == EmuPath::exact ? nullptr : simd_kernel(path);
  // Threads from 2^16 (exact) or 2^20 (fast) products per thread on.
  std::size_t work = 0;
  if (__builtin_mul_overflow(M * N, K, &work)) work = SIZE_MAX;
  const int max_threads = threads > 0 ? threads : omp_get_max_threads();
  const int nt = static_cast<int>(std::clamp<std::size_t>(
      work >> (path == EmuPath::exact ? 16 : 20), 1, static_cast<std::size_t>(max_threads)));
  if (kern) return run_tiles(*kern, A, B, C, M, N, K, f, nt);
  const RngKey key = rng_key(acc.seed);
  const bool stochastic = acc.round == Round::stochastic;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
  for (std::ptrdiff_t ii = 0; ii < static_cast<std::ptrdiff_t>(M); ++ii) {
    const auto i = static_cast<std::size_t>(ii);
    const float* a = A + i * K;
    std::size_t j = 0;
    if (path != EmuPath::exact)
      for (; j + 4 <= N; j += 4) {
        const float* b[4] = {B + j * K, B + (j + 1) * K, B + (j + 2) * K, B + (j + 3) * K};
        emu_dots_fast<4>(a, b, K, f, C + i * N + j);
      }
    for (; j < N; ++j) {
      const float* b = B + j * K;
      C[i * N + j] =
          path == EmuPath::exact
              ? emu_dot(K, f.promote_every,
                        [&](double part, std::size_t k) {
                          const std::uint32_t rand =
                              stochastic ? random_bits(key, (i * N + j) * K + k) : 0;
                          return emu_step_exact(part, a[k], b[k], f, rand);
                        })
              : emu_dot(K, f.promote_every,
                        [&](double part, std::size_t k) { return emu_step_fast(part, a[k], b[k], f); });
    }
  }
}

}  // namespace lowp::quant::detail

namespace lowp::quant {

void gemm_emulated(const float* A, const float* B, float* C, std::size_t M, std::size_t N,
                   std::size_t K, const Accumulation& acc) {
  detail::gemm_emulated_path(detail::EmuPath::fast, A, B, C, M, N, K, acc);
}

}  // namespace lowp::quant
