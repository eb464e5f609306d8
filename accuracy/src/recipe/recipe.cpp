// The recipe text format (docs/recipes.md): parsing and printing.
#include <charconv>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/linear.hpp"
#include "recipe/key_value.hpp"
#include "recipe/recipe_notes.hpp"

namespace lowp::accuracy {
namespace {

constexpr std::array<std::string_view, linear_kind_count> kKindNames = {
    "wq", "wk", "wv", "wo", "gate", "up", "down", "classifier"};
// The shorthand keys `weights` / `act` cover the linears inside the layers, not the classifier.
constexpr std::size_t kLayerKinds = 7;

// A quantization-point key (weights*, act*, attn.*, kv) applied to `s`, a Recipe or one
// layer's LayerSpecs; returns false when `key` is not one. Throws on a malformed spec.
template <class Specs>
bool apply_spec_key(Specs& s, std::string_view key, std::string_view value, bool classifier, std::string& why) {
  const auto spec = [&]() { return quant::parse_quant_spec(value); };
  if (key == "weights" || key == "act") {
    auto& arr = key == "weights" ? s.weights : s.act;
    const auto v = spec();
    for (std::size_t i = 0; i < kLayerKinds; ++i) arr[i] = v;
  } else if (key.starts_with("weights.") || key.starts_with("act.")) {
    const bool w = key.starts_with("weights.");
    const std::string_view kind = key.substr(w ? 8 : 4);
    for (std::size_t i = 0; i < (classifier ? linear_kind_count : kLayerKinds); ++i)
      if (kKindNames[i] == kind) {
        (w ? s.weights : s.act)[i] = spec();
        return true;
      }
    why = "unknown linear '" + std::string(kind) + "' (wq, wk, wv, wo, gate, up, down" +
          (classifier ? ", classifier)" : "; the classifier is in no layer)");
  } else if (key == "attn.q") {
    s.q = spec();
  } else if (key == "attn.k") {
    s.k = spec();
  } else if (key == "attn.qk") {
    s.q = s.k = spec();
  } else if (key == "attn.p") {
    s.p = spec();
  } else if (key == "attn.v") {
    s.v = spec();
  } else if (key == "kv") {
    s.kv = spec();
  } else {
    return false;
  }
  return true;
}

// `layer.<N>.<key>`: a quantization-point key for layer N only.
bool apply_layer_key(Recipe& r, std::string_view key, std::string_view value, std::string& why) {
  if (!key.starts_with("layer.")) return false;
  key.remove_prefix(6);
  const std::size_t dot = key.find('.');
  int n = -1;
  const std::string_view digits = key.substr(0, dot);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (dot == std::string_view::npos || ec != std::errc{} || p != digits.data() + digits.size() || n < 0) {
    why = "expected layer.<N>.<key> with N a layer index from 0";
    return true;
  }
  LayerSpecs& s = r.layer[n];
  if (!apply_spec_key(s, key.substr(dot + 1), value, false, why) && why.empty())
    why = "unknown per-layer key '" + std::string(key.substr(dot + 1)) +
          "' (weights[.<kind>], act[.<kind>], attn.q, attn.k, attn.qk, attn.p, attn.v, kv)";
  return true;
}

constexpr std::array<std::string_view, 4> kCalibNames = {"none", "imatrix", "gptq", "awq"};

// `weights.calibrate[.<option>]`; returns false when `key` is not one.
bool apply_calibrate_key(Recipe& r, std::string_view key, std::string_view value, std::string& why) {
  if (key != "weights.calibrate" && !key.starts_with("weights.calibrate.")) return false;
  CalibrateOptions& c = r.calibrate;
  const auto number = [&](auto& out, std::string_view what) {
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
    if (ec != std::errc{} || p != value.data() + value.size()) why = std::string(key) + " is " + std::string(what) + ", not '" + std::string(value) + "'";
  };
  if (key == "weights.calibrate") {
    for (std::size_t i = 0; i < kCalibNames.size(); ++i)
      if (kCalibNames[i] == value) {
        c.method = static_cast<CalibMethod>(i);
        return true;
      }
    why = "weights.calibrate is none, imatrix, gptq or awq, not '" + std::string(value) + "'";
  } else if (key == "weights.calibrate.act_order") {
    if (!detail::parse_on_off(value, c.act_order)) why = "weights.calibrate.act_order is on or off, not '" + std::string(value) + "'";
  } else if (key == "weights.calibrate.damp") {
    number(c.damp, "a number >= 0");
    if (why.empty() && !(c.damp >= 0 && c.damp < 1e6)) why = "weights.calibrate.damp is a number >= 0, not '" + std::string(value) + "'";
  } else if (key == "weights.calibrate.scales") {
    if (value == "rule") c.imatrix_scales = false;
    else if (value == "imatrix") c.imatrix_scales = true;
    else why = "weights.calibrate.scales is rule or imatrix, not '" + std::string(value) + "'";
  } else if (key == "weights.calibrate.grid") {
    number(c.grid, "a whole number of alpha points in [1, 1000]");
    if (why.empty() && (c.grid < 1 || c.grid > 1000))
      why = "weights.calibrate.grid is a whole number of alpha points in [1, 1000], not '" + std::string(value) + "'";
  } else {
    why = "unknown key '" + std::string(key) + "' (weights.calibrate[.act_order|.damp|.scales|.grid])";
  }
  return true;
}

// `dynamic`, `static` (= static:amax), `static:amax` or `static:p<percentile>` with the
// percentile in (0, 100] and at most 4 decimals (kept exactly, as percentile x 10^4).
bool parse_scale_source(std::string_view v, ScaleSource& out) {
  if (v == "dynamic") {
    out = {};
    return true;
  }
  if (v == "static" || v == "static:amax") {
    out = {true, 1000000};
    return true;
  }
  if (!v.starts_with("static:p")) return false;
  v.remove_prefix(8);
  const std::size_t dot = v.find('.');
  const std::string_view whole = v.substr(0, dot), frac = dot == std::string_view::npos ? "" : v.substr(dot + 1);
  if (whole.empty() || whole.size() > 3 || frac.size() > 4 || (dot != std::string_view::npos && frac.empty())) return false;
  std::uint64_t e4 = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return false;
    e4 = e4 * 10 + static_cast<std::uint64_t>(c - '0');
  }
  for (std::size_t i = 0; i < 4; ++i) {
    const char c = i < frac.size() ? frac[i] : '0';
    if (c < '0' || c > '9') return false;
    e4 = e4 * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (e4 == 0 || e4 > 1000000) return false;
  out = {true, static_cast<std::uint32_t>(e4)};
  return true;
}

// One `key = value` line applied to `r`; returns an error message, empty on success. A key only
// training reads goes to `training_keys` (the training side of the same file, docs/recipes.md).
std::string apply_line(Recipe& r, std::string_view key, std::string_view value, std::vector<std::string>& training_keys) {
  std::string why;
  if (detail::is_training_key(key)) {
    training_keys.emplace_back(key);
    return "";
  }
  if (apply_calibrate_key(r, key, value, why)) return why;
  if (key == "act.scale" || key == "attn.scale") {  // before act.<kind>
    if (!parse_scale_source(value, key == "act.scale" ? r.act_scale : r.attn_scale))
      return std::string(key) + " is dynamic, static, static:amax or static:p<percentile in (0, 100]>, not '" +
             std::string(value) + "'";
    return "";
  }
  if (key == "act.ggml") {  // before act.<kind>
    if (!detail::parse_on_off(value, r.act_ggml)) return "act.ggml is on or off, not '" + std::string(value) + "'";
    return "";
  }
  if (apply_spec_key(r, key, value, true, why) || apply_layer_key(r, key, value, why) ||
      detail::apply_name_or_note(key, value, r.name, r.note, why))
    return why;
  if (key == "linear") {
    if (value != "none") quant::linear_preset(value);  // unknown names fail here, with the line
    r.linear = value == "none" ? "" : std::string(value);
  } else if (key == "kv.group") {
    if (value == "head") r.kv_per_head = true;
    else if (value == "spec") r.kv_per_head = false;
    else return "kv.group is head or spec, not '" + std::string(value) + "'";
  } else if (key == "attn.rotate") {
    if (value == "none") r.attn_rotate = AttnRotation::none;
    else if (value == "hadamard") r.attn_rotate = AttnRotation::hadamard;
    else if (value == "randomized") r.attn_rotate = AttnRotation::randomized;
    else return "attn.rotate is none, hadamard or randomized, not '" + std::string(value) + "'";
  } else if (key == "attn.p_form") {
    if (value == "normalized") r.p_form = AttnPForm::normalized;
    else if (value == "fa3") r.p_form = AttnPForm::fa3;
    else return "attn.p_form is normalized or fa3, not '" + std::string(value) + "'";
  } else if (key == "attn.rotate_v" || key == "quarot" || key == "pad") {
    bool b = false;
    if (!detail::parse_on_off(value, b)) return std::string(key) + " is on or off, not '" + std::string(value) + "'";
    (key == "quarot" ? r.quarot : key == "pad" ? r.pad : r.rotate_v) = b;
  } else if (key == "seed") {
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), r.seed);
    if (ec != std::errc{} || p != value.data() + value.size())
      return "seed is an unsigned integer, not '" + std::string(value) + "'";
  } else {
    return "unknown key '" + std::string(key) + "'";
  }
  return "";
}

}  // namespace

std::string_view linear_kind_name(LinearKind kind) { return kKindNames[static_cast<std::size_t>(kind)]; }

std::string_view calib_method_name(CalibMethod m) { return kCalibNames[static_cast<std::size_t>(m)]; }

std::string scale_source_text(const ScaleSource& s) {
  if (!s.fixed) return "dynamic";
  if (s.percentile_e4 == 1000000) return "static:amax";
  std::string frac = std::to_string(10000 + s.percentile_e4 % 10000).substr(1);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return "static:p" + std::to_string(s.percentile_e4 / 10000) + (frac.empty() ? "" : "." + frac);
}

bool Recipe::needs_calibration() const {
  return (calibrate.method != CalibMethod::none || static_scales()) && !is_identity();
}

bool LayerSpecs::empty() const {
  for (std::size_t i = 0; i < linear_kind_count; ++i)
    if (weights[i] || act[i]) return false;
  return !q && !k && !p && !v && !kv;
}

LayerSpecs Recipe::specs_at(int n) const {
  LayerSpecs s;
  s.weights = weights;
  s.act = act;
  s.q = q;
  s.k = k;
  s.p = p;
  s.v = v;
  s.kv = kv;
  const auto it = layer.find(n);
  if (n < 0 || it == layer.end()) return s;
  const LayerSpecs& o = it->second;
  for (std::size_t i = 0; i < linear_kind_count; ++i) {
    if (o.weights[i]) s.weights[i] = o.weights[i];
    if (o.act[i]) s.act[i] = o.act[i];
  }
  for (auto [to, from] : {std::pair{&s.q, &o.q}, {&s.k, &o.k}, {&s.p, &o.p}, {&s.v, &o.v}, {&s.kv, &o.kv}})
    if (*from) *to = *from;
  return s;
}

bool Recipe::is_identity() const {
  for (const auto& [n, s] : layer)
    if (!s.empty()) return false;
  for (std::size_t i = 0; i < linear_kind_count; ++i)
    if (weights[i] || act[i]) return false;
  return linear.empty() && !q && !k && !p && !v && !kv && attn_rotate == AttnRotation::none &&
         !rotate_v && !quarot && !act_ggml;  // `pad` alone changes nothing
}

Recipe parse_recipe(std::string_view text) {
  std::vector<std::string> training_keys;
  return detail::parse_recipe_noting(text, training_keys);
}

Recipe detail::parse_recipe_noting(std::string_view text, std::vector<std::string>& training_keys) {
  Recipe r;
  detail::read_key_values(text, "recipe", [&](std::string_view key, std::string_view value) {
    return apply_line(r, key, value, training_keys);
  });
  if (r.name.empty()) throw Error("recipe: no `name = ...` line");
  bool layer_kv = false;
  for (const auto& [n, s] : r.layer) layer_kv = layer_kv || s.kv;
  if (r.kv_per_head && !r.kv && !layer_kv) throw Error("recipe '" + r.name + "': kv.group = head needs a kv spec");
  if (r.rotate_v && r.attn_rotate == AttnRotation::none)
    throw Error("recipe '" + r.name + "': attn.rotate_v = on needs attn.rotate = hadamard or randomized");
  return r;
}

std::string to_text(const Recipe& r) {
  std::string t = "name = " + r.name + "\n";
  if (!r.note.empty()) t += "note = " + r.note + "\n";
  if (!r.linear.empty()) t += "linear = " + r.linear + "\n";
  const auto put = [&](const std::string& key, const std::optional<quant::QuantSpec>& s) {
    if (s) t += key + " = " + quant::describe(*s) + "\n";
  };
  for (std::size_t i = 0; i < linear_kind_count; ++i) put("weights." + std::string(kKindNames[i]), r.weights[i]);
  for (std::size_t i = 0; i < linear_kind_count; ++i) put("act." + std::string(kKindNames[i]), r.act[i]);
  put("attn.q", r.q);
  put("attn.k", r.k);
  put("attn.p", r.p);
  put("attn.v", r.v);
  put("kv", r.kv);
  for (const auto& [n, s] : r.layer) {
    const std::string pre = "layer." + std::to_string(n) + ".";
    for (std::size_t i = 0; i < kLayerKinds; ++i) put(pre + "weights." + std::string(kKindNames[i]), s.weights[i]);
    for (std::size_t i = 0; i < kLayerKinds; ++i) put(pre + "act." + std::string(kKindNames[i]), s.act[i]);
    put(pre + "attn.q", s.q);
    put(pre + "attn.k", s.k);
    put(pre + "attn.p", s.p);
    put(pre + "attn.v", s.v);
    put(pre + "kv", s.kv);
  }
  if (r.kv_per_head) t += "kv.group = head\n";
  if (r.p_form == AttnPForm::fa3) t += "attn.p_form = fa3\n";
  if (r.attn_rotate == AttnRotation::hadamard) t += "attn.rotate = hadamard\n";
  if (r.attn_rotate == AttnRotation::randomized) t += "attn.rotate = randomized\n";
  if (r.rotate_v) t += "attn.rotate_v = on\n";
  if (r.quarot) t += "quarot = on\n";
  if (r.act_ggml) t += "act.ggml = on\n";
  if (r.seed) t += "seed = " + std::to_string(r.seed) + "\n";
  if (r.pad) t += "pad = on\n";
  const CalibrateOptions& c = r.calibrate, d;
  if (c.method != CalibMethod::none) t += "weights.calibrate = " + std::string(calib_method_name(c.method)) + "\n";
  if (c.act_order) t += "weights.calibrate.act_order = on\n";
  if (c.damp != d.damp) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", c.damp);
    t += "weights.calibrate.damp = " + std::string(buf) + "\n";
  }
  if (c.imatrix_scales) t += "weights.calibrate.scales = imatrix\n";
  if (c.grid != d.grid) t += "weights.calibrate.grid = " + std::to_string(c.grid) + "\n";
  if (r.act_scale.fixed) t += "act.scale = " + scale_source_text(r.act_scale) + "\n";
  if (r.attn_scale.fixed) t += "attn.scale = " + scale_source_text(r.attn_scale) + "\n";
  return t;
}

}  // namespace lowp::accuracy
