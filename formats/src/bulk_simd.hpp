// Internal: the bulk cast algorithm for one SIMD width, shared by the AVX2 and AVX-512 kernels.
//
// Everything is integer arithmetic on the float32 bit pattern, one element per 32-bit lane,
// following the scalar codec step by step (see bulk_kernels.hpp for the constants), so the
// results are bitwise the scalar reference's. `Isa` supplies the xsimd batch types and the few
// operations xsimd 8 lacks or gets wrong for these widths (variable shifts on AVX-512, unsigned
// compares, mask counts, gathers, and the code packing), as intrinsics.
#pragma once
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>

#include "bulk_kernels.hpp"

// The per-vector steps must inline into the loops (GCC otherwise calls some of them, passing
// vectors through memory).
#define LOWP_VEC [[gnu::always_inline]] static inline

namespace lowp::bulk_detail {

template <class Isa>
struct Kernels {
  using I = typename Isa::I;
  using F = typename Isa::F;
  using M = typename Isa::M;
  static constexpr std::size_t N = I::size;

  static I u32(std::uint32_t v) { return I(static_cast<std::int32_t>(v)); }
  static I iota() {
    alignas(64) std::int32_t a[N];
    for (std::size_t l = 0; l < N; ++l) a[l] = static_cast<std::int32_t>(l);
    return I::load_aligned(a);
  }

  // Constants of the loops, built once and hidden from the optimiser: GCC otherwise
  // re-broadcasts the immediates inside the loops when registers run short (AVX2), which
  // costs three instructions each time where a spilled constant costs none.
  struct Consts {
    I zero = I(0), one = I(1), all_ones = I(-1), k32 = I(32), abs_mask = I(0x7fffffff), frac_mask = I(0x7fffff),
      implicit = I(1 << 23), finite_max = I(0x7f7fffff), inf_bits = I(0x7f800000), sign_bit = u32(0x80000000),
      mul1 = u32(0x7feb352dU), mul2 = u32(0x846ca68bU), k149 = I(149);
    Consts() {
      for (I* v : {&zero, &one, &all_ones, &k32, &abs_mask, &frac_mask, &implicit, &finite_max, &inf_bits, &sign_bit,
                   &mul1, &mul2, &k149})
        asm("" : "+v"(v->data));
    }
  };

  // ---- counter-based random bits (lowp::random_bits, N consecutive indices) ----
  LOWP_VEC I mix32(const Consts& k, I x) {
    x ^= Isa::template srl<16>(x);
    x *= k.mul1;
    x ^= Isa::template srl<15>(x);
    x *= k.mul2;
    x ^= Isa::template srl<16>(x);
    return x;
  }
  [[gnu::noinline]] static I random_scalar(RngKey key, std::uint64_t index, std::uint64_t stride) {
    alignas(64) std::uint32_t r[N];
    for (std::size_t l = 0; l < N; ++l) r[l] = random_bits(key, index + l * stride);
    return I::load_aligned(reinterpret_cast<const std::int32_t*>(r));
  }
  // The bits of indices index + l * stride, l < N; `lanes` holds l * stride (mod 2^32).
  LOWP_VEC I random_vec(const Consts& k, RngKey key, std::uint64_t index, std::uint64_t stride, I lanes) {
    const auto lo = static_cast<std::uint32_t>(index);
    if (stride > UINT32_MAX / N || lo > UINT32_MAX - (N - 1) * stride)  // the low word wraps: rare
      return random_scalar(key, index, stride);
    const auto hi = static_cast<std::uint32_t>(index >> 32);
    I x = mix32(k, (u32(lo) + lanes) ^ u32(key.k0));
    return mix32(k, x ^ u32(hi ^ key.k1));
  }
  static I stride_lanes(std::uint64_t stride) { return iota() * I(static_cast<std::int32_t>(static_cast<std::uint32_t>(stride))); }

  // ---- float32 -> code ----
  struct Enc : Consts {
    I shift, shift_sub, bias_adj, bias_off, e_cap, sub_below, tiny_below, max_code, flush_below, keep_mag,
        neg_or, neg_zero, ovf_pos, ovf_neg, inf_pos, inf_neg, zero_pos, zero_neg, nan_pos, nan_neg;
    bool tiny, flush, implicit_ties, simple_sign;
    explicit Enc(const EncodeParams& p)
        : shift(p.shift), shift_sub(p.shift_sub), bias_adj(p.bias_adj),
          bias_off(static_cast<std::int32_t>(static_cast<std::uint32_t>(p.bias_adj) << 23)), e_cap(p.e_cap),
          sub_below(p.sub_below), tiny_below(p.tiny_below), max_code(u32(p.max_code)),
          flush_below(u32(p.flush_below)), keep_mag(u32(p.keep_mag)), neg_or(u32(p.neg_or)),
          neg_zero(u32(p.neg_zero)), ovf_pos(u32(p.ovf_pos)), ovf_neg(u32(p.ovf_neg)),
          inf_pos(u32(p.inf_pos)), inf_neg(u32(p.inf_neg)), zero_pos(u32(p.zero_pos)),
          zero_neg(u32(p.zero_neg)), nan_pos(u32(p.nan_pos)), nan_neg(u32(p.nan_neg)),
          tiny(p.tiny_below != INT_MIN), flush(p.flush_below != 0), implicit_ties(p.implicit_ties),
          // Negative results are just the magnitude with the sign bit (signed formats with -0).
          simple_sign(p.keep_mag == ~0u && p.neg_zero == p.neg_or) {}
  };

  // The rounded magnitude code of N float32 values (before the overflow, sign and special-value
  // rules): `a` is |x|'s bit pattern, `rnd` the random bits (stochastic rounding only).
  template <Round R, bool Renorm>
  LOWP_VEC I round_mag(const Enc& c, I a, M neg, I rnd) {
    I bexp = Isa::template srl<23>(a);
    I frac = a & c.frac_mask;
    I V, sh;
    M sub;
    if constexpr (Renorm) {
      // bias >= 128 or no zero: renormalise float32 subnormals through an exact int -> float
      // conversion, and clamp E so that V stays below 2^32.
      const M s = bexp == c.zero;
      const I t = xsimd::bitwise_cast<I>(xsimd::to_float(frac));
      bexp = xsimd::select(s, Isa::template srl<23>(t) - c.k149, bexp);
      frac = xsimd::select(s, t & c.frac_mask, frac);
      const I E = bexp + c.bias_adj;
      sub = E < c.sub_below;
      V = xsimd::select(sub, frac | c.implicit, (xsimd::min(E, c.e_cap) << 23) | frac);
      sh = xsimd::select(sub, c.shift_sub - E, c.shift);
      if (c.tiny) V = xsimd::select(E < c.tiny_below, c.zero, V);
    } else {
      // bias <= 127: re-biasing the pattern gives V directly (float32 subnormals included
      // when bias = 127). A subnormal result rounds the significand (no implicit bit for a
      // float32 subnormal, whose exponent is that of b = 1) at a larger shift.
      const I E = xsimd::max(bexp, c.one) + c.bias_adj;
      sub = E < c.sub_below;
      V = xsimd::select(sub, xsimd::select(bexp == c.zero, frac, frac | c.implicit), a + c.bias_off);
      sh = xsimd::select(sub, c.shift_sub - E, c.shift);
    }

    // Round V to a multiple of 2^sh; V < 2^32 and any sh >= 0 (shifts of 32+ give 0).
    const I q = Isa::srlv(V, sh);
    const I low = Isa::sllv(c.all_ones, sh) ^ c.all_ones;  // 2^sh - 1
    if constexpr (R == Round::nearest_even) {
      const I hm1 = Isa::template srl<1>(low);  // half - 1
      I odd = q & low & c.one;  // the parity of the code (low & 1: nothing to round when sh = 0)
      if constexpr (Renorm) {
        // Ties::implicit_bit: a normal result's last kept bit is its implicit 1.
        if (c.implicit_ties) odd = xsimd::select(sub, odd, low & c.one);
      }
      return Isa::srlv(V + hm1 + odd, sh);
    } else if constexpr (R == Round::nearest_away) {
      const I half = low ^ Isa::template srl<1>(low);
      return Isa::srlv(V + half, sh);
    } else if constexpr (R == Round::toward_zero) {
      return q;
    } else if constexpr (R == Round::toward_pos || R == Round::toward_neg) {
      const M inexact = (V & low) != c.zero;
      return Isa::inc_if(q, R == Round::toward_pos ? (inexact & ~neg) : (inexact & neg));
    } else if constexpr (R == Round::odd) {  // set the last bit when inexact
      return q | xsimd::select((V & low) != c.zero, c.one, c.zero);
    } else {
      // Stochastic: up iff fraction32 + rnd carries out of 32 bits, i.e. rnd >u ~fraction32,
      // where fraction32 is the discarded part as a 32-bit fraction: V's bits below sh moved to
      // the top (q's bits shift out), or shifted down when sh > 32.
      const I f32 = Isa::sllv(V, c.k32 - sh) | Isa::srlv(V, sh - c.k32);
      return Isa::inc_if(q, Isa::gt_u(rnd, f32 ^ c.all_ones));
    }
  }

  static void count_specials(M inf, M nan, CastReport& rep) {
    rep.inf_inputs += Isa::count(inf);
    rep.nan_inputs += Isa::count(nan);
  }

  // Codes of N float32 values `x`.
  template <Round R, bool Renorm>
  LOWP_VEC I encode_vec(const Enc& c, F x, I rnd, CastReport& rep) {
    const I u = xsimd::bitwise_cast<I>(x);
    const I a = u & c.abs_mask;
    const M neg = u < c.zero;
    I mag = round_mag<R, Renorm>(c, a, neg, rnd);
    // Without Renorm, V <= |x|'s pattern and finite magnitudes stay below 2^31: compare signed.
    M ovf;
    if constexpr (Renorm) ovf = Isa::gt_u(mag, c.max_code);
    else ovf = mag > c.max_code;
    if (c.flush) mag = xsimd::select(mag < c.flush_below, c.zero, mag);
    I code;
    if (c.simple_sign) {
      code = mag | ((u >> 31) & c.neg_or);  // arithmetic shift: all ones when negative
    } else {
      const I negc = xsimd::select(mag == c.zero, c.neg_zero, (mag & c.keep_mag) | c.neg_or);
      code = xsimd::select(neg, negc, mag);
    }
    code = xsimd::select(ovf, xsimd::select(neg, c.ovf_neg, c.ovf_pos), code);
    if constexpr (Renorm) code = xsimd::select(a == c.zero, xsimd::select(neg, c.zero_neg, c.zero_pos), code);
    const M special = a > c.finite_max;
    if (xsimd::any(special)) {
      const M inf = a == c.inf_bits, nan = a > c.inf_bits;
      count_specials(inf, nan, rep);
      code = xsimd::select(inf, xsimd::select(neg, c.inf_neg, c.inf_pos), code);
      code = xsimd::select(nan, xsimd::select(neg, c.nan_neg, c.nan_pos), code);
    }
    return code;
  }

  // ---- code -> float32 ----
  struct Dec {
    const float* table;
    I code_mask, mag_mask, sign_bit, norm_add, sub_below, nan_mag_from, nan_code, inf_mag;
    F sub_scale;
    int shift, sign_shift;
    bool sub;
    explicit Dec(const DecodeParams& p)
        : table(p.table), code_mask(u32(p.code_mask)), mag_mask(u32(p.mag_mask)),
          sign_bit(u32(p.sign_bit)), norm_add(u32(p.norm_add)), sub_below(u32(p.sub_below)),
          nan_mag_from(I(p.nan_mag_from)), nan_code(u32(p.nan_code)), inf_mag(u32(p.inf_mag)),
          sub_scale(p.sub_scale), shift(p.shift), sign_shift(p.sign_shift), sub(p.sub_below != 0) {}
  };

  LOWP_VEC F decode_vec(const Dec& d, I c) {
    c &= d.code_mask;
    if (d.table) return Isa::gather(d.table, c);
    const I mag = c & d.mag_mask;
    I f = (mag << d.shift) + d.norm_add;
    // Subnormal codes: an exact int -> float conversion and a power-of-two scale whose result
    // is a float32 normal (so DAZ/FTZ settings cannot change it).
    if (d.sub) f = xsimd::select(mag < d.sub_below, xsimd::bitwise_cast<I>(xsimd::to_float(mag) * d.sub_scale), f);
    f = xsimd::select(mag == d.inf_mag, I(0x7f800000), f);
    f |= (c & d.sign_bit) << d.sign_shift;
    // NaN codes keep their sign bit, as decode() does.
    f = xsimd::select((mag >= d.nan_mag_from) | (c == d.nan_code), I(0x7fc00000) | (f & I(INT32_MIN)), f);
    return xsimd::bitwise_cast<F>(f);
  }

  // ---- loops ----
  template <Round R, int SB, bool Renorm>
  static void encode_loop(const EncodeParams& p, const float* in, std::size_t n, std::uint8_t* out, CastReport& rep) {
    const Enc c(p);
    const I lanes = iota(), steps = stride_lanes(p.stride);
    I rnd(0);
    std::size_t i = 0;
    for (; i + N <= n; i += N) {
      if constexpr (R == Round::stochastic) rnd = random_vec(c, p.key, p.offset + i * p.stride, p.stride, steps);
      Isa::template store<SB>(out + i * SB / 8, encode_vec<R, Renorm>(c, F::load_unaligned(in + i), rnd, rep));
    }
    if (i < n) {  // the tail through a zero-padded vector; padding lanes give code 0
      const std::size_t r = n - i;
      alignas(64) float buf[N] = {};
      std::memcpy(buf, in + i, r * sizeof(float));
      if constexpr (R == Round::stochastic) rnd = random_vec(c, p.key, p.offset + i * p.stride, p.stride, steps);
      I code = encode_vec<R, Renorm>(c, F::load_aligned(buf), rnd, rep);
      code = xsimd::select(lanes < I(static_cast<int>(r)), code, I(0));
      alignas(64) std::uint8_t tmp[N * 4];
      Isa::template store<SB>(tmp, code);
      std::memcpy(out + i * SB / 8, tmp, encoded_bytes_of(SB, r));
    }
  }

  template <int SB>
  static void decode_loop(const DecodeParams& p, const std::uint8_t* in, std::size_t n, float* out) {
    const Dec d(p);
    std::size_t i = 0;
    for (; i + N <= n; i += N) decode_vec(d, Isa::template load<SB>(in + i * SB / 8)).store_unaligned(out + i);
    if (i < n) {
      const std::size_t r = n - i;
      alignas(64) std::uint8_t buf[N * 4] = {};
      std::memcpy(buf, in + i * SB / 8, encoded_bytes_of(SB, r));
      alignas(64) float tmp[N];
      decode_vec(d, Isa::template load<SB>(buf)).store_aligned(tmp);
      std::memcpy(out + i, tmp, r * sizeof(float));
    }
  }

  // Fake-quant of N values for formats whose negative results are the magnitude with the sign
  // bit and whose decode is arithmetic: the magnitude goes straight back to float32, skipping
  // the code's sign and NaN/Inf decoding. `k` holds decode() of the constant codes.
  struct Fused {
    I ovf_pos, ovf_neg, inf_pos, inf_neg, nan_pos, nan_neg;
    Fused(const Enc& c, const Dec& d)
        : ovf_pos(as_i(decode_vec(d, c.ovf_pos))), ovf_neg(as_i(decode_vec(d, c.ovf_neg))),
          inf_pos(as_i(decode_vec(d, c.inf_pos))), inf_neg(as_i(decode_vec(d, c.inf_neg))),
          nan_pos(as_i(decode_vec(d, c.nan_pos))), nan_neg(as_i(decode_vec(d, c.nan_neg))) {}
    static I as_i(F f) { return xsimd::bitwise_cast<I>(f); }
  };

  template <Round R>
  LOWP_VEC F fake_quant_vec(const Enc& c, const Dec& d, const Fused& k, F x, I rnd, CastReport& rep) {
    const I u = xsimd::bitwise_cast<I>(x);
    const I a = u & c.abs_mask;
    const M neg = u < c.zero;
    I mag = round_mag<R, false>(c, a, neg, rnd);
    const M ovf = mag > c.max_code;  // as in encode_vec without Renorm
    if (c.flush) mag = xsimd::select(mag < c.flush_below, c.zero, mag);
    I f = (mag << d.shift) + d.norm_add;
    if (d.sub) f = xsimd::select(mag < d.sub_below, xsimd::bitwise_cast<I>(xsimd::to_float(mag) * d.sub_scale), f);
    f |= u & c.sign_bit;
    f = xsimd::select(ovf, xsimd::select(neg, k.ovf_neg, k.ovf_pos), f);
    const M special = a > c.finite_max;
    if (xsimd::any(special)) {
      const M inf = a == c.inf_bits, nan = a > c.inf_bits;
      count_specials(inf, nan, rep);
      f = xsimd::select(inf, xsimd::select(neg, k.inf_neg, k.inf_pos), f);
      f = xsimd::select(nan, xsimd::select(neg, k.nan_neg, k.nan_pos), f);
    }
    return xsimd::bitwise_cast<F>(f);
  }

  template <Round R, bool IsFused>
  LOWP_VEC F fq_vec(const Enc& c, const Dec& d, const Fused& k, F x, I rnd, CastReport& rep) {
    if constexpr (IsFused) return fake_quant_vec<R>(c, d, k, x, rnd, rep);
    else return decode_vec(d, encode_vec<R, true>(c, x, rnd, rep));  // any format: the general path
  }

  template <Round R, bool IsFused>
  static void fake_quant_loop(const EncodeParams& e, const DecodeParams& dp, float* x, std::size_t n, CastReport& rep) {
    const Enc c(e);
    const Dec d(dp);
    const Fused k(c, d);
    const I steps = stride_lanes(e.stride);
    I rnd(0);
    std::size_t i = 0;
    for (; i + N <= n; i += N) {
      if constexpr (R == Round::stochastic) rnd = random_vec(c, e.key, e.offset + i * e.stride, e.stride, steps);
      fq_vec<R, IsFused>(c, d, k, F::load_unaligned(x + i), rnd, rep).store_unaligned(x + i);
    }
    if (i < n) {
      const std::size_t r = n - i;
      alignas(64) float buf[N] = {};
      std::memcpy(buf, x + i, r * sizeof(float));
      if constexpr (R == Round::stochastic) rnd = random_vec(c, e.key, e.offset + i * e.stride, e.stride, steps);
      fq_vec<R, IsFused>(c, d, k, F::load_aligned(buf), rnd, rep).store_aligned(buf);
      std::memcpy(x + i, buf, r * sizeof(float));
    }
  }

  template <Round R>
  static void fake_quant_mode(const EncodeParams& e, const DecodeParams& d, float* x, std::size_t n, CastReport& rep) {
    const bool fused = d.table == nullptr && !e.renorm && e.keep_mag == ~0u && e.neg_zero == e.neg_or;
    if (fused) fake_quant_loop<R, true>(e, d, x, n, rep);
    else fake_quant_loop<R, false>(e, d, x, n, rep);
  }

  static std::size_t encoded_bytes_of(int sb, std::size_t n) {
    switch (sb) {
      case 4: return (n + 1) / 2;
      case 6: return (n + 3) / 4 * 3;
      default: return n * static_cast<std::size_t>(sb / 8);
    }
  }

  // ---- dispatch on the rounding mode and the storage width ----
  template <Round R, bool Renorm>
  static void encode_sb(const EncodeParams& p, const float* in, std::size_t n, std::uint8_t* out, CastReport& rep) {
    switch (p.storage) {
      case 4: return encode_loop<R, 4, Renorm>(p, in, n, out, rep);
      case 6: return encode_loop<R, 6, Renorm>(p, in, n, out, rep);
      case 8: return encode_loop<R, 8, Renorm>(p, in, n, out, rep);
      case 16: return encode_loop<R, 16, Renorm>(p, in, n, out, rep);
      default: return encode_loop<R, 32, Renorm>(p, in, n, out, rep);
    }
  }
  template <Round R>
  static void encode_mode(const EncodeParams& p, const float* in, std::size_t n, std::uint8_t* out, CastReport& rep) {
    if (p.renorm) encode_sb<R, true>(p, in, n, out, rep);
    else encode_sb<R, false>(p, in, n, out, rep);
  }

  // Calls f(std::integral_constant<Round, r>{}): the rounding mode becomes a template argument.
  template <class F>
  static void with_round(Round r, F&& f) {
    switch (r) {
      case Round::nearest_even: return f(std::integral_constant<Round, Round::nearest_even>{});
      case Round::nearest_away: return f(std::integral_constant<Round, Round::nearest_away>{});
      case Round::toward_zero: return f(std::integral_constant<Round, Round::toward_zero>{});
      case Round::toward_pos: return f(std::integral_constant<Round, Round::toward_pos>{});
      case Round::toward_neg: return f(std::integral_constant<Round, Round::toward_neg>{});
      case Round::stochastic: return f(std::integral_constant<Round, Round::stochastic>{});
      case Round::odd: return f(std::integral_constant<Round, Round::odd>{});
    }
  }

  static void encode(const EncodeParams& p, const float* in, std::size_t n, std::uint8_t* out, CastReport& rep) {
    with_round(p.round, [&](auto r) { encode_mode<decltype(r)::value>(p, in, n, out, rep); });
  }

  static void decode(const DecodeParams& p, const std::uint8_t* in, std::size_t n, float* out) {
    switch (p.storage) {
      case 4: return decode_loop<4>(p, in, n, out);
      case 6: return decode_loop<6>(p, in, n, out);
      case 8: return decode_loop<8>(p, in, n, out);
      case 16: return decode_loop<16>(p, in, n, out);
      default: return decode_loop<32>(p, in, n, out);
    }
  }

  static void fake_quant(const EncodeParams& e, const DecodeParams& d, float* x, std::size_t n, CastReport& rep) {
    with_round(e.round, [&](auto r) { fake_quant_mode<decltype(r)::value>(e, d, x, n, rep); });
  }
};

}  // namespace lowp::bulk_detail

#undef LOWP_VEC
