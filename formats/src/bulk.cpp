// Bulk casts: argument checks, code storage, run-time ISA dispatch and the scalar reference
// kernels (per element: the scalar codec), which every SIMD kernel is tested bitwise against.
#include "lowp/formats/bulk.hpp"

#include <array>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "bulk_kernels.hpp"
#include "codec_rules.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"

namespace lowp {
namespace {

using bulk_detail::DecodeParams;
using bulk_detail::EncodeParams;

// ---- storage of codes ----
void put_code(std::uint8_t* out, std::size_t i, std::uint32_t c, int sb) noexcept {
  switch (sb) {
    case 4:
      if (i % 2 == 0) out[i / 2] = static_cast<std::uint8_t>(c);
      else out[i / 2] = static_cast<std::uint8_t>(out[i / 2] | c << 4);
      return;
    case 6: {
      std::uint8_t* g = out + i / 4 * 3;
      const int j = static_cast<int>(i % 4);
      if (j == 0) g[0] = g[1] = g[2] = 0;
      const std::uint32_t w = (static_cast<std::uint32_t>(g[0]) | g[1] << 8 | g[2] << 16) | c << (6 * j);
      g[0] = static_cast<std::uint8_t>(w);
      g[1] = static_cast<std::uint8_t>(w >> 8);
      g[2] = static_cast<std::uint8_t>(w >> 16);
      return;
    }
    case 8: out[i] = static_cast<std::uint8_t>(c); return;
    case 16: {
      const auto v = static_cast<std::uint16_t>(c);
      std::memcpy(out + 2 * i, &v, 2);
      return;
    }
    default: std::memcpy(out + 4 * i, &c, 4); return;
  }
}

std::uint32_t get_code(const std::uint8_t* in, std::size_t i, int sb) noexcept {
  switch (sb) {
    case 4: return (in[i / 2] >> (4 * (i % 2))) & 0xfu;
    case 6: {
      const std::uint8_t* g = in + i / 4 * 3;
      const std::uint32_t w = static_cast<std::uint32_t>(g[0]) | g[1] << 8 | g[2] << 16;
      return (w >> (6 * (i % 4))) & 0x3fu;
    }
    case 8: return in[i];
    case 16: {
      std::uint16_t v;
      std::memcpy(&v, in + 2 * i, 2);
      return v;
    }
    default: {
      std::uint32_t v;
      std::memcpy(&v, in + 4 * i, 4);
      return v;
    }
  }
}

// ---- scalar reference kernels ----
std::uint32_t rand_for(const BulkOptions& opt, RngKey key, std::size_t i) noexcept {
  return opt.cast.round == Round::stochastic ? random_bits(key, opt.offset + i * opt.stride) : 0u;
}

void count(CastReport& r, float x) noexcept {
  if (std::isnan(x)) ++r.nan_inputs;
  else if (std::isinf(x)) ++r.inf_inputs;
}

CastReport encode_scalar(const Format& f, std::span<const float> in, std::uint8_t* out, const BulkOptions& opt, int sb) {
  CastReport rep;
  const RngKey key = rng_key(opt.seed);
  for (std::size_t i = 0; i < in.size(); ++i) {
    count(rep, in[i]);
    put_code(out, i, encode(f, in[i], opt.cast, rand_for(opt, key, i)), sb);
  }
  return rep;
}

void decode_scalar(const Format& f, const std::uint8_t* in, std::span<float> out) {
  const int sb = storage_bits(f);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(decode(f, get_code(in, i, sb)));
}

CastReport fake_quant_scalar(const Format& f, std::span<float> x, const BulkOptions& opt) {
  CastReport rep;
  const RngKey key = rng_key(opt.seed);
  for (std::size_t i = 0; i < x.size(); ++i) {
    count(rep, x[i]);
    x[i] = static_cast<float>(decode(f, encode(f, x[i], opt.cast, rand_for(opt, key, i))));
  }
  return rep;
}

// ---- per-call constants for the SIMD kernels ----

EncodeParams encode_params(const Format& f, const BulkOptions& opt) {
  const CastOptions& o = opt.cast;
  const int m = f.man_bits;
  EncodeParams p;
  p.round = o.round;
  p.storage = storage_bits(f);
  p.shift = 23 - m;
  p.bias_adj = f.bias - 127;
  p.e_cap = 1 << f.exp_bits;
  // Ties::implicit_bit under nearest-even rounds below E = 1 as subnormals would (see codec.cpp),
  // and a tie of a normal result up.
  p.implicit_ties = f.ties == Ties::implicit_bit && o.round == Round::nearest_even;
  const bool sub = f.subnormals || p.implicit_ties;
  p.shift_sub = sub ? p.shift + 1 : p.shift;
  p.sub_below = sub ? 1 : INT_MIN;
  p.tiny_below = sub ? INT_MIN : 0;
  // Above bias 127 a float32 subnormal's exponent (that of b = 1) is a normal one in the
  // target, and a format without zero treats zero apart: renormalise such inputs and give
  // zeros their own codes.
  p.renorm = f.bias > 127 || !f.has_zero();
  p.max_code = f.max_finite_code();
  p.flush_below = o.flush_subnormals && f.subnormals ? 1u << m : 0u;
  p.keep_mag = f.is_signed ? ~0u : 0u;
  p.neg_or = f.is_signed ? f.sign_bit() : f.nan_code().value_or(0u);
  p.neg_zero = detail::finish(f, true, 0);
  p.ovf_pos = detail::overflow_code(f, false, detail::overflow_to_infinity(o, false));
  p.ovf_neg = detail::overflow_code(f, true, detail::overflow_to_infinity(o, true));
  const float inf = std::numeric_limits<float>::infinity();
  p.inf_pos = encode(f, inf, o);
  p.inf_neg = encode(f, -inf, o);
  p.zero_pos = encode(f, 0.0f, o);
  p.zero_neg = encode(f, -0.0f, o);
  p.nan_pos = encode(f, std::numeric_limits<float>::quiet_NaN(), o);
  p.nan_neg = encode(f, -std::numeric_limits<float>::quiet_NaN(), o);
  p.key = rng_key(opt.seed);
  p.offset = opt.offset;
  p.stride = opt.stride;
  return p;
}

// Whether every code's value is a float32 that the arithmetic decode produces exactly:
// normal codes map onto float32 normals, and subnormal ones either share float32's scale
// (bias 127) or are float32 normals themselves (bias + m <= 127).
bool decode_arith(const Format& f) noexcept {
  if (f.kind != Kind::floating || !f.subnormals) return false;
  if (!(f.max_finite() <= FLT_MAX)) return false;
  return f.bias == 127 || f.bias + f.man_bits <= 127;
}

// The decode() of every code of a <= 8-bit format as float32, cached per thread for the last format.
const float* decode_table(const Format& f) {
  thread_local Format cached{};
  thread_local std::array<float, 256> table{};
  thread_local bool valid = false;
  if (!valid || !(cached == f)) {
    for (std::uint32_t c = 0; c < 256; ++c) table[c] = static_cast<float>(decode(f, c));
    cached = f;
    valid = true;
  }
  return table.data();
}

// nullopt when no SIMD decode applies (formats wider than 8 bits that are not float32-exact).
std::optional<DecodeParams> decode_params(const Format& f) {
  DecodeParams d;
  d.storage = storage_bits(f);
  d.code_mask = f.code_mask();
  if (!decode_arith(f)) {
    if (f.bits() > 8) return std::nullopt;
    d.table = decode_table(f);
    return d;
  }
  const int m = f.man_bits;
  d.sign_bit = f.sign_bit();
  d.mag_mask = f.code_mask() & ~f.sign_bit();
  d.sign_shift = f.is_signed ? 32 - f.bits() : 0;
  d.shift = 23 - m;
  d.norm_add = static_cast<std::uint32_t>(127 - f.bias) << 23;
  if (f.bias != 127) {
    d.sub_below = 1u << m;
    d.sub_scale = std::ldexp(1.0f, 1 - f.bias - m);
  }
  const std::uint32_t all = (1u << (f.exp_bits + m)) - 1;
  d.nan_mag_from = INT32_MAX;
  d.nan_code = 0xffffffffu;
  d.inf_mag = f.inf_code(false).value_or(0xffffffffu);
  switch (f.specials) {
    case Specials::ieee: d.nan_mag_from = static_cast<std::int32_t>(*f.inf_code(false) + 1); break;
    case Specials::fn: d.nan_mag_from = static_cast<std::int32_t>(all); break;
    case Specials::fnuz:
    case Specials::p3109: d.nan_code = *f.nan_code(); break;
    case Specials::finite: break;
  }
  return d;
}

// ---- dispatch ----
Isa pick_isa(std::optional<Isa> forced, const char* fn) {
  if (!forced) return best_isa();
  if (!isa_available(*forced))
    throw Error(std::string(fn) + ": instruction set '" + std::string(isa_name(*forced)) +
                "' is not available on this CPU");
  return *forced;
}

}  // namespace

int storage_bits(const Format& f) noexcept {
  const int b = f.bits();
  return b <= 4 ? 4 : b <= 6 ? 6 : b <= 8 ? 8 : b <= 16 ? 16 : 32;
}

std::size_t encoded_bytes(const Format& f, std::size_t n) noexcept {
  switch (storage_bits(f)) {
    case 4: return (n + 1) / 2;
    case 6: return (n + 3) / 4 * 3;
    default: return n * static_cast<std::size_t>(storage_bits(f) / 8);
  }
}

CastReport encode_f32(const Format& f, std::span<const float> in, std::span<std::uint8_t> out,
                      const BulkOptions& opt) {
  validate(f);
  const Isa isa = pick_isa(opt.isa, "encode_f32");
  const int sb = opt.one_per_byte && storage_bits(f) < 8 ? 8 : storage_bits(f);
  const std::size_t need = sb == 8 ? in.size() : encoded_bytes(f, in.size());
  if (out.size() < need)
    throw Error("encode_f32: output has " + std::to_string(out.size()) + " bytes, " + format_name(f) +
                " needs " + std::to_string(need) + " for " + std::to_string(in.size()) + " values");
  if (isa == Isa::scalar || f.kind != Kind::floating) return encode_scalar(f, in, out.data(), opt, sb);
  EncodeParams p = encode_params(f, opt);
  p.storage = sb;
  CastReport rep;
  if (isa == Isa::avx512) bulk_detail::encode_avx512(p, in.data(), in.size(), out.data(), rep);
  else bulk_detail::encode_avx2(p, in.data(), in.size(), out.data(), rep);
  return rep;
}

void decode_f32(const Format& f, std::span<const std::uint8_t> in, std::span<float> out,
                std::optional<Isa> forced) {
  validate(f);
  const Isa isa = pick_isa(forced, "decode_f32");
  const std::size_t need = encoded_bytes(f, out.size());
  if (in.size() < need)
    throw Error("decode_f32: input has " + std::to_string(in.size()) + " bytes, " + format_name(f) +
                " needs " + std::to_string(need) + " for " + std::to_string(out.size()) + " values");
  const auto d = isa == Isa::scalar ? std::nullopt : decode_params(f);
  if (!d) return decode_scalar(f, in.data(), out);
  if (isa == Isa::avx512) bulk_detail::decode_avx512(*d, in.data(), out.size(), out.data());
  else bulk_detail::decode_avx2(*d, in.data(), out.size(), out.data());
}

CastReport fake_quant_f32(const Format& f, std::span<float> x, const BulkOptions& opt) {
  validate(f);
  const Isa isa = pick_isa(opt.isa, "fake_quant_f32");
  const auto d = isa == Isa::scalar || f.kind != Kind::floating ? std::nullopt : decode_params(f);
  if (!d) return fake_quant_scalar(f, x, opt);
  const EncodeParams p = encode_params(f, opt);
  CastReport rep;
  if (isa == Isa::avx512) bulk_detail::fake_quant_avx512(p, *d, x.data(), x.size(), rep);
  else bulk_detail::fake_quant_avx2(p, *d, x.data(), x.size(), rep);
  return rep;
}

}  // namespace lowp
