// The text spelling of a QuantSpec, and the shape check every granularity shares.
#include <cctype>
#include <charconv>
#include <string>
#include <vector>

#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::quant {
namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}

bool parse_size(std::string_view s, std::size_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size() && out > 0;
}

struct NamedRule {
  std::string_view name;
  ScaleRule rule;
};
constexpr NamedRule kRules[] = {
    {"none", ScaleRule::none}, {"amax", ScaleRule::amax},   {"pow2", ScaleRule::amax_pow2},
    {"int", ScaleRule::absmax_int}, {"mx", ScaleRule::mx},  {"floor", ScaleRule::mx},
    {"ceil", ScaleRule::mx_ceil},   {"even", ScaleRule::mx_even}, {"rceil", ScaleRule::mx_rceil},
    {"nvfp4", ScaleRule::nvfp4}, {"mse", ScaleRule::mse},
    {"torchao-log2", ScaleRule::mx_torchao_log2}, {"te-mxfp4", ScaleRule::mx_te_mxfp4},
    {"gfloat", ScaleRule::mx_gfloat}, {"mlx", ScaleRule::mx_mlx}, {"aiter", ScaleRule::mx_aiter},
    {"4over6", ScaleRule::nvfp4_4over6},
};

// 16-bit and wider floats (bf16, fp16, tf32) are used as plain casts, the way frameworks use
// them; narrower formats need a scale to be usable at all.
ScaleRule default_rule(const Format& f) {
  if (f.kind == Kind::integer) return ScaleRule::absmax_int;
  return f.bits() >= 16 ? ScaleRule::none : ScaleRule::amax;
}

QuantSpec preset(std::string_view name, bool& found) {
  found = true;
  QuantSpec s;
  if (name == "mxfp8" || name == "mxfp6" || name == "mxfp4") {
    s.format = parse_format(name == "mxfp8" ? "e4m3" : name == "mxfp6" ? "e2m3" : "e2m1");
    s.granularity = Granularity::block;
    s.block = 32;
    s.rule = ScaleRule::mx;
    s.cast.saturate = true;
  } else if (name == "nvfp4") {
    s.format = parse_format("e2m1");
    s.granularity = Granularity::block;
    s.block = 16;
    s.rule = ScaleRule::nvfp4;
    s.cast.saturate = true;
  } else {
    found = false;
  }
  return s;
}

}  // namespace

QuantSpec parse_quant_spec(std::string_view text) {
  const std::string t = lower(text);
  const auto parts = split(t, ':');
  const auto fail = [&](const std::string& why) -> Error {
    return Error("quantization spec '" + std::string(text) + "': " + why +
                 " (expected <format>[:tensor|row|col|b<N>|t<N>][:none|amax|pow2|int|mx|floor|ceil|even|rceil|nvfp4|mse|torchao-log2|te-mxfp4|gfloat|mlx|aiter|4over6]"
                 "[:<rounding>][:sat])");
  };
  if (parts.empty() || parts[0].empty()) throw fail("empty format");
  bool is_preset = false;
  QuantSpec s = preset(parts[0], is_preset);
  if (!is_preset) {
    try {
      s.format = parse_format(parts[0]);
    } catch (const Error& e) {
      throw Error("quantization spec '" + std::string(text) + "': " + e.what());
    }
    s.rule = default_rule(s.format);
    // Saturating casts are what every scaled recipe uses: amax maps onto the largest finite.
    s.cast.saturate = true;
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string_view p = parts[i];
    std::size_t n = 0;
    if (p == "tensor") {
      s.granularity = Granularity::tensor;
    } else if (p == "row") {
      s.granularity = Granularity::row;
    } else if (p == "col" || p == "column") {
      s.granularity = Granularity::column;
    } else if (p.size() > 1 && p[0] == 'b' && parse_size(p.substr(1), n)) {
      s.granularity = Granularity::block;
      s.block = n;
    } else if (p.size() > 1 && p[0] == 't' && parse_size(p.substr(1), n)) {
      s.granularity = Granularity::tile;
      s.block = n;
    } else if (p == "sat") {
      s.cast.saturate = true;
    } else if (p == "nosat") {
      s.cast.saturate = false;
    } else if (p == "pad") {
      s.pad = true;
    } else if (auto r = parse_round(p)) {
      s.cast.round = *r;
    } else {
      bool rule_found = false;
      for (const auto& r : kRules)
        if (r.name == p) {
          s.rule = r.rule;
          rule_found = true;
        }
      if (!rule_found) throw fail("unknown part '" + std::string(p) + "'");
    }
  }
  // EVEN rounds amax to the element's mantissa width, which only a float format has.
  if (s.rule == ScaleRule::mx_even && s.format.kind != Kind::floating)
    throw fail("rule even needs a floating-point element format");
  if (s.rule == ScaleRule::nvfp4_4over6 && !(s.format == parse_format("e2m1")))
    throw fail("rule 4over6 needs e2m1 elements");
  return s;
}

std::string_view rule_name(ScaleRule rule) {
  for (const auto& n : kRules)
    if (n.rule == rule) return n.name;  // the first spelling: mx, not floor
  return "?";
}

std::string describe(const QuantSpec& s) {
  std::string r = format_name(s.format);
  switch (s.granularity) {
    case Granularity::tensor: r += ":tensor"; break;
    case Granularity::row: r += ":row"; break;
    case Granularity::column: r += ":col"; break;
    case Granularity::block: r += ":b" + std::to_string(s.block); break;
    case Granularity::tile: r += ":t" + std::to_string(s.block); break;
  }
  r.append(":").append(rule_name(s.rule));
  r.append(":").append(round_name(s.cast.round));
  r.append(s.cast.saturate ? ":sat" : ":nosat");
  if (s.pad) r += ":pad";
  return r;
}

void check_shape(const QuantSpec& s, std::size_t rows, std::size_t cols) {
  if (s.granularity != Granularity::block && s.granularity != Granularity::tile) return;
  if (s.block == 0) throw Error("quantization " + describe(s) + ": block size 0");
  if (s.pad) return;
  const bool tile = s.granularity == Granularity::tile;
  const bool cols_bad = cols % s.block != 0, rows_bad = tile && rows % s.block != 0;
  if (!cols_bad && !rows_bad) return;
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on long operator+ chains.
  std::string msg = "tensor ";
  msg.append(std::to_string(rows)).append("x").append(std::to_string(cols)).append(": ");
  msg.append(std::to_string(cols_bad ? cols : rows)).append(cols_bad ? " columns" : " rows");
  msg.append(" are not a multiple of the ").append(tile ? "tile" : "block").append(" size ");
  msg.append(std::to_string(s.block)).append(" (").append(describe(s)).append("; ask for padding with :pad)");
  throw Error(msg);
}

}  // namespace lowp::quant
