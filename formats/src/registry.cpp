#include "lowp/formats/registry.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "lowp/numerics/error.hpp"

namespace lowp {
namespace {

Format p3109_format(int k, int p, bool is_signed, bool extended);

Format with_ties(Format f, Ties t) {
  f.ties = t;
  validate(f);
  return f;
}

std::vector<NamedFormat> make_presets() {
  using S = Specials;
  std::vector<NamedFormat> v = {
      {"float8_e4m3fn", {"e4m3", "fp8_e4m3"}, minifloat(4, 3, S::fn), "OCP FP8 E4M3: no Inf, NaN = S.1111.111, max 448"},
      {"float8_e5m2", {"e5m2", "fp8_e5m2"}, minifloat(5, 2, S::ieee), "OCP FP8 E5M2: IEEE-style Inf/NaN, max 57344"},
      {"float8_e4m3fnuz", {"e4m3fnuz"}, minifloat(4, 3, S::fnuz, true, 8), "AMD/Graphcore FP8: NaN = 0x80, no -0, max 240"},
      {"float8_e5m2fnuz", {"e5m2fnuz"}, minifloat(5, 2, S::fnuz, true, 16), "AMD/Graphcore FP8: NaN = 0x80, no -0, max 57344"},
      {"float8_e8m0fnu", {"e8m0", "ue8m0"}, with_ties(minifloat(8, 0, S::fn, false, 127, false), Ties::implicit_bit),
       "OCP MX scale: powers of two 2^-127..2^127, NaN = 0xFF, no zero; rounds as ml_dtypes (1.5*2^k -> 2^(k+1))"},
      {"float8_e8m0fnu_rne", {"e8m0-rne", "e8m0_rne"}, minifloat(8, 0, S::fn, false, 127, false),
       "E8M0 correctly rounded: ties to the even exponent (3 -> 2)"},
      {"float8_ue4m3", {"ue4m3"}, minifloat(4, 3, S::fn, false), "NVFP4 block scale: E4M3FN without sign, max 448"},
      {"float6_e2m3fn", {"e2m3", "fp6_e2m3"}, minifloat(2, 3, S::finite), "OCP MX FP6 E2M3: all finite, max 7.5"},
      {"float6_e3m2fn", {"e3m2", "fp6_e3m2"}, minifloat(3, 2, S::finite), "OCP MX FP6 E3M2: all finite, max 28"},
      {"float4_e2m1fn", {"e2m1", "fp4", "fp4_e2m1"}, minifloat(2, 1, S::finite), "OCP MX FP4 E2M1: all finite, max 6"},
      {"bfloat16", {"bf16"}, minifloat(8, 7, S::ieee), "bfloat16"},
      {"float16", {"fp16", "half"}, minifloat(5, 10, S::ieee), "IEEE binary16"},
      {"tfloat32", {"tf32"}, minifloat(8, 10, S::ieee), "NVIDIA TF32: 19 bits, float32 range"},
      {"float32", {"fp32", "e8m23"}, minifloat(8, 23, S::ieee), "IEEE binary32 (identity cast)"},
      {"float8_e4m3", {}, minifloat(4, 3, S::ieee), "ml_dtypes IEEE-style E4M3: Inf/NaN, max 240"},
      {"float8_e3m4", {}, minifloat(3, 4, S::ieee), "ml_dtypes IEEE-style E3M4: Inf/NaN, max 15.5"},
      {"float8_e4m3b11fnuz", {"e4m3b11fnuz"}, minifloat(4, 3, S::fnuz, true, 11), "ml_dtypes/Graphcore E4M3 with bias 11: NaN = 0x80, no -0, max 30"},
  };
  for (int p = 1; p <= 7; ++p) {
    static const char* names[] = {"binary8p1", "binary8p2", "binary8p3", "binary8p4", "binary8p5", "binary8p6", "binary8p7"};
    static const char* p3109_names[] = {"p3109_k8p1se", "p3109_k8p2se", "p3109_k8p3se", "p3109_k8p4se",
                                        "p3109_k8p5se", "p3109_k8p6se", "p3109_k8p7se"};
    v.push_back({names[p - 1], {p3109_names[p - 1]}, p3109_format(8, p, true, true),
                 "IEEE P3109 binary8pP = p3109_k8pPse (draft 2026): single zero, NaN = 0x80, Inf = 0x7F/0xFF"});
  }
  v.push_back({"int8", {"i8"}, integer_format(8, true, false), "two's complement [-128, 127]"});
  v.push_back({"int8_sym", {"i8s"}, integer_format(8, true, true), "symmetric [-127, 127] (0x80 unused)"});
  v.push_back({"int4", {"i4"}, integer_format(4, true, false), "two's complement [-8, 7]"});
  v.push_back({"int4_sym", {"i4s"}, integer_format(4, true, true), "symmetric [-7, 7] (0x8 unused)"});
  v.push_back({"uint8", {"u8"}, integer_format(8, false, false), "[0, 255]"});
  v.push_back({"uint4", {"u4"}, integer_format(4, false, false), "[0, 15]"});
  return v;
}

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

// IEEE P3109 (the current draft, as graphcore-research/gfloat defines it): K bits, precision P,
// signed or unsigned, extended (+-Inf) or finite. Signed: sign, K - P exponent bits; unsigned:
// K - P + 1 exponent bits; both P - 1 mantissa bits, subnormals, bias 2^(exponent bits - 1).
// NaN: the sign-only code (signed), the all-ones code (unsigned). Extended puts +-Inf at the top
// magnitude below the NaN; finite formats are fnuz (signed) and unsigned fn with zero.
Format p3109_format(int k, int p, bool is_signed, bool extended) {
  const int e = k - p + (is_signed ? 0 : 1);
  if (k < 3 || p < 1 || e < 1)
    throw Error("P3109 formats need K >= 3 and 1 <= P < K (signed) or P <= K (unsigned)");
  if (e > 8) throw Error("P3109 K" + std::to_string(k) + " P" + std::to_string(p) + " needs more than 8 exponent bits");
  const Specials sp = extended ? Specials::p3109 : is_signed ? Specials::fnuz : Specials::fn;
  return minifloat(e, p - 1, sp, is_signed, 1 << (e - 1));
}

// p3109_k{K}p{P}{s|u}{e|f}
std::optional<Format> parse_p3109(std::string_view s) {
  if (!s.starts_with("p3109_k")) return std::nullopt;
  s.remove_prefix(7);
  const auto ppos = s.find('p');
  if (ppos == std::string_view::npos || s.size() < ppos + 3) return std::nullopt;
  int k = 0, p = 0;
  if (!parse_int(s.substr(0, ppos), k) || !parse_int(s.substr(ppos + 1, s.size() - ppos - 3), p)) return std::nullopt;
  const char sg = s[s.size() - 2], dom = s[s.size() - 1];
  if ((sg != 's' && sg != 'u') || (dom != 'e' && dom != 'f')) return std::nullopt;
  return p3109_format(k, p, sg == 's', dom == 'e');
}

// eXmY[fn|fnuz|fin|fnu|p3109][_nz][_bBIAS], with an optional leading 'u' for unsigned;
// _nz: no subnormals and no zero (E = 0 is an ordinary binade), as fnu implies.
std::optional<Format> parse_generic(std::string_view s) {
  bool is_signed = true;
  if (s.starts_with("u")) { is_signed = false; s.remove_prefix(1); }
  if (!s.starts_with("e")) return std::nullopt;
  s.remove_prefix(1);
  const auto mpos = s.find('m');
  if (mpos == std::string_view::npos) return std::nullopt;
  int e = 0, m = 0;
  if (!parse_int(s.substr(0, mpos), e)) return std::nullopt;
  s.remove_prefix(mpos + 1);
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (!parse_int(s.substr(0, digits), m)) return std::nullopt;
  s.remove_prefix(digits);
  std::optional<int> bias;
  if (const auto b = s.find("_b"); b != std::string_view::npos) {
    int v = 0;
    if (!parse_int(s.substr(b + 2), v)) return std::nullopt;
    bias = v;
    s = s.substr(0, b);
  }
  Specials sp = e >= 2 ? Specials::ieee : Specials::finite;
  bool subnormals = true, rne = false;
  if (s.ends_with("_rne")) { rne = true; s.remove_suffix(4); }
  if (s.ends_with("_nz")) { subnormals = false; s.remove_suffix(3); }
  if (s == "fn") sp = Specials::fn;
  else if (s == "fnuz") sp = Specials::fnuz;
  else if (s == "fin") sp = Specials::finite;
  else if (s == "p3109") sp = Specials::p3109;
  else if (s == "fnu" && subnormals) { sp = Specials::fn; is_signed = false; subnormals = false; }
  else if (!s.empty()) return std::nullopt;
  if (e < 1 || e > 8 || m < 0 || m > 23) return std::nullopt;
  Format f = minifloat(e, m, sp, is_signed, bias, subnormals);
  // Without mantissa bits and subnormals (E8M0), ml_dtypes' ties unless _rne asks otherwise.
  const bool no_mantissa = m == 0 && !f.subnormals;
  if (rne && !no_mantissa) throw Error("_rne applies only to formats without mantissa bits and subnormals");
  if (no_mantissa && !rne) f.ties = Ties::implicit_bit;
  return f;
}

// intN, intN_sym, uintN (N in 2..16).
std::optional<Format> parse_integer(std::string_view s) {
  bool is_signed = true, symmetric = false;
  if (s.starts_with("u")) { is_signed = false; s.remove_prefix(1); }
  if (!s.starts_with("int")) return std::nullopt;
  s.remove_prefix(3);
  if (is_signed && s.ends_with("_sym")) { symmetric = true; s.remove_suffix(4); }
  int bits = 0;
  if (!parse_int(s, bits)) return std::nullopt;
  return integer_format(bits, is_signed, symmetric);
}

std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return r;
}

}  // namespace

std::span<const NamedFormat> presets() {
  static const std::vector<NamedFormat> all = make_presets();
  return all;
}

Format parse_format(std::string_view text) {
  const std::string name = lower(text);
  for (const auto& p : presets()) {
    if (p.name == name) return p.format;
    for (auto a : p.aliases)
      if (a == name) return p.format;
  }
  try {
    if (auto f = parse_p3109(name)) return *f;
    if (auto f = parse_generic(name)) return *f;
    if (auto f = parse_integer(name)) return *f;
  } catch (const Error& e) {
    throw Error("format '" + std::string(text) + "': " + e.what());
  }
  std::string valid;
  for (const auto& p : presets()) {
    valid += valid.empty() ? "" : ", ";
    valid += p.name;
  }
  throw Error("unknown format '" + std::string(text) + "'; valid names: " + valid + ", or " +
              std::string(format_grammar()));
}

std::string_view format_grammar() {
  return "[u]eXmY[fn|fnuz|fin|fnu|p3109][_nz][_rne][_bBIAS] (X in 1..8, Y in 0..23), p3109_kKpP{s|u}{e|f}, intN, intN_sym "
         "or uintN (N in 2..16)";
}

std::string format_name(const Format& f) {
  for (const auto& p : presets())
    if (p.format == f) return std::string(p.name);
  if (f.kind == Kind::integer) {
    const bool symmetric = f.is_signed && f.int_min == -f.int_max;
    return (f.is_signed ? "int" : "uint") + std::to_string(f.bits()) + (symmetric ? "_sym" : "");
  }
  if (f.specials == Specials::p3109 || f.specials == Specials::fnuz || (f.specials == Specials::fn && !f.is_signed)) {
    const int k = f.bits(), p = f.man_bits + 1;
    const bool ext = f.specials == Specials::p3109;
    const bool fits = k >= 3 && f.exp_bits == k - p + (f.is_signed ? 0 : 1);
    if (fits && p3109_format(k, p, f.is_signed, ext) == f)
      return "p3109_k" + std::to_string(k) + "p" + std::to_string(p) + (f.is_signed ? "s" : "u") + (ext ? "e" : "f");
  }
  std::string s = (f.is_signed ? "e" : "ue") + std::to_string(f.exp_bits) + "m" + std::to_string(f.man_bits);
  const Specials def = f.exp_bits >= 2 ? Specials::ieee : Specials::finite;
  bool nz = !f.subnormals;
  if (nz && f.specials == Specials::fn && !f.is_signed) {
    s = s.substr(1) + "fnu";
    nz = false;
  } else if (f.specials == Specials::fn) {
    s += "fn";
  } else if (f.specials == Specials::fnuz) {
    s += "fnuz";
  } else if (f.specials == Specials::p3109) {
    s += "p3109";
  } else if (f.specials != def) {
    s += "fin";
  }
  if (nz) s += "_nz";
  if (f.man_bits == 0 && !f.subnormals && f.ties == Ties::even_code) s += "_rne";
  // An explicit bias also keeps the spelling off the aliases (e2m1 is the OCP FP4 preset,
  // while an IEEE-style e2m1 is e2m1_b1).
  bool alias = false;
  for (const auto& p : presets())
    for (auto a : p.aliases) alias = alias || a == s;
  if (alias || f.bias != (1 << (f.exp_bits - 1)) - 1) s += "_b" + std::to_string(f.bias);
  return s;
}

}  // namespace lowp
