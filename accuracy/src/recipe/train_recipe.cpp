// Training recipes: the text format, the built-in recipes, the per-linear lookup.
#include "recipe/train_recipe.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "recipe/find_recipe.hpp"
#include "recipe/key_value.hpp"

namespace lowp::train {
namespace {

using accuracy::LinearKind;
using quant::GemmRecipe;
using quant::LinearRecipe;
using quant::SpecialQuant;

// The recipe names of the linears inside a layer (the classifier, the last LinearKind, is not one).
constexpr std::size_t kLayerKinds = accuracy::linear_kind_count - 1;
std::string_view kind_name(std::size_t k) { return accuracy::linear_kind_name(static_cast<LinearKind>(k)); }

bool parse_size(std::string_view v, std::size_t& out) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc{} && p == v.data() + v.size() && !v.empty();
}

std::string parse_bool(std::string_view key, std::string_view v, bool& out) {
  if (accuracy::detail::parse_on_off(v, out)) return "";
  return std::string(key) + " is on or off, not '" + std::string(v) + "'";
}

std::optional<quant::QuantSpec> parse_operand(std::string_view v) {
  if (v == "f32" || v == "fp32" || v == "none") return std::nullopt;
  return quant::parse_quant_spec(v);
}

// none | hadamard | randomized | block<N> | random-block<N> | step-block<N> | te-block16
std::string parse_rotation(std::string_view v, GemmRecipe& g) {
  g.signs = quant::BlockSigns::none;
  g.rotation_block = 0;
  if (v == "none") return g.rotation = hadamard::RotationKind::none, "";
  if (v == "hadamard") return g.rotation = hadamard::RotationKind::hadamard, "";
  if (v == "randomized") return g.rotation = hadamard::RotationKind::randomized, "";
  std::string_view n = v;
  for (const auto& [prefix, signs] : {std::pair{std::string_view("random-"), quant::BlockSigns::per_index},
                                      std::pair{std::string_view("step-"), quant::BlockSigns::per_step},
                                      std::pair{std::string_view("te-"), quant::BlockSigns::fixed}})
    if (n.starts_with(prefix)) {
      g.signs = signs;
      n.remove_prefix(prefix.size());
      break;
    }
  if (n.starts_with("block") && parse_size(n.substr(5), g.rotation_block) && g.rotation_block > 0)
    return g.rotation = hadamard::RotationKind::block_diagonal, "";
  return "a rotation is none, hadamard, randomized, block<N>, random-block<N>, step-block<N> or te-block16, not '" +
         std::string(v) + "'";
}

std::string parse_special(std::string_view v, SpecialQuant& s) {
  if (v == "standard") return s = SpecialQuant::none, "";
  if (v == "quest") return s = SpecialQuant::quest, "";
  if (v == "four-over-six") return s = SpecialQuant::four_over_six, "";
  if (v == "ms-eden") return s = SpecialQuant::ms_eden, "";
  if (v == "quartet-sr") return s = SpecialQuant::quartet_sr, "";
  return "a quantizer is standard, quest, four-over-six, ms-eden or quartet-sr, not '" + std::string(v) + "'";
}

// f32 | e<E>m<M>[:<round>][/<promote_every>]
std::string parse_accumulator(std::string_view v, GemmRecipe& g) {
  if (v == "f32" || v == "fp32") return g.accumulation.reset(), "";
  const std::string why = "an accumulator is f32 or e<E>m<M>[:<round>][/<promote every N products>], not '" +
                          std::string(v) + "'";
  quant::Accumulation a;
  std::string_view rest = v;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    if (!parse_size(rest.substr(slash + 1), a.promote_every)) return why;
    rest = rest.substr(0, slash);
  }
  if (const auto colon = rest.find(':'); colon != std::string_view::npos) {
    const auto round = parse_round(rest.substr(colon + 1));
    if (!round) return why;
    a.round = *round;
    rest = rest.substr(0, colon);
  }
  std::size_t e = 0, m = 0;
  const auto mpos = rest.find('m');
  if (!rest.starts_with("e") || mpos == std::string_view::npos || !parse_size(rest.substr(1, mpos - 1), e) ||
      !parse_size(rest.substr(mpos + 1), m) || e < 2 || e > 8 || m < 1 || m > 23)
    return why;
  a.exp_bits = static_cast<int>(e);
  a.man_bits = static_cast<int>(m);
  g.accumulation = a;
  return "";
}

struct GemmKey {
  GemmRecipe LinearRecipe::*gemm;
  std::string_view a, b;  // operand names
};
const std::map<std::string_view, GemmKey>& gemm_keys() {
  static const std::map<std::string_view, GemmKey> k = {{"fwd", {&LinearRecipe::fwd, "x", "w"}},
                                                        {"dgrad", {&LinearRecipe::dgrad, "dy", "w"}},
                                                        {"wgrad", {&LinearRecipe::wgrad, "dy", "x"}}};
  return k;
}

// `<gemm>` / `<gemm>.<a|b>` / `<gemm>.<a|b>.quantizer` / `<gemm>.rotate|delayed|accumulator`.
std::string apply_gemm_key(TrainRecipe& r, std::string_view key, std::string_view value, bool& edited) {
  const std::size_t dot = key.find('.');
  const auto it = gemm_keys().find(key.substr(0, dot));
  if (it == gemm_keys().end()) return "unknown key '" + std::string(key) + "'";
  const GemmKey& gk = it->second;
  GemmRecipe& g = r.linear.*gk.gemm;
  edited = true;
  if (dot == std::string_view::npos) {  // the whole GEMM from a preset
    const LinearRecipe& p = quant::linear_preset(value);
    g = p.*gk.gemm;
    if (gk.gemm != &LinearRecipe::wgrad && p.engine == quant::LinearEngine::switchback_int8)
      r.linear.engine = quant::LinearEngine::switchback_int8;
    return "";
  }
  std::string_view field = key.substr(dot + 1);
  if (field == "rotate") return parse_rotation(value, g);
  if (field == "delayed") return parse_bool(key, value, g.delayed);
  if (field == "accumulator") return parse_accumulator(value, g);
  for (int side = 0; side < 2; ++side) {
    const std::string_view op = side == 0 ? gk.a : gk.b;
    if (field == op) {
      (side == 0 ? g.a : g.b) = parse_operand(value);
      return "";
    }
    if (field.starts_with(op) && field.substr(op.size()) == ".quantizer")
      return parse_special(value, side == 0 ? g.a_special : g.b_special);
  }
  return "unknown key '" + std::string(key) + "' (operands of " + std::string(key.substr(0, dot)) + ": " +
         std::string(gk.a) + ", " + std::string(gk.b) + ")";
}

// Evaluation keys training applies: the forward GEMM's operands (W, X) of a linear.
bool is_forward_operand_key(std::string_view key) {
  if (key.starts_with("layer.")) key = key.substr(std::min(key.size(), key.find('.', 6) + 1));
  return (key == "weights" || key == "act" || key.starts_with("weights.") || key.starts_with("act.")) &&
         !key.starts_with("weights.calibrate") && key != "act.scale" && key != "act.ggml";
}

std::string apply_line(TrainRecipe& r, std::string_view key, std::string_view value, bool& edited) {
  if (!accuracy::detail::is_training_key(key) && !accuracy::detail::is_shared_key(key)) {
    // An evaluation key, already read (and checked) by parse_recipe into r.eval.
    if (!is_forward_operand_key(key)) r.eval_only_keys.emplace_back(key);
    return "";
  }
  if (std::string why; accuracy::detail::apply_name_or_note(key, value, r.name, r.note, why)) return why;
  if (key == "linear") {
    r.linear = quant::linear_preset(value == "none" ? "fp32" : value);  // evaluation's `none`: float32
    edited = false;
  } else if (key.starts_with("linear.")) {
    const std::string_view kind = key.substr(7);
    for (std::size_t i = 0; i < kLayerKinds; ++i)
      if (kind_name(i) == kind) return r.per_kind[i] = quant::linear_preset(value), "";
    return "unknown linear '" + std::string(kind) + "' (wq, wk, wv, wo, gate, up, down)";
  } else if (key.starts_with("layer.")) {
    std::size_t i = 0;
    if (!parse_size(key.substr(6), i)) return "layer.<index> takes a layer number, not '" + std::string(key.substr(6)) + "'";
    r.per_layer[i] = quant::linear_preset(value);
  } else if (key == "keep_first" || key == "keep_last") {
    std::size_t n = 0;
    if (!parse_size(value, n)) return std::string(key) + " is a number of layers, not '" + std::string(value) + "'";
    (key == "keep_first" ? r.keep_first : r.keep_last) = n;
  } else if (key == "keep") {
    r.keep = quant::linear_preset(value);
  } else if (key == "classifier") {
    r.classifier = quant::linear_preset(value);
  } else if (key == "optimizer") {
    r.optimizer = parse_optimizer_kind(value);
  } else if (key == "master") {
    r.master = parse_master_format(value);
  } else if (key == "master.sr") {
    return parse_bool(key, value, r.master_stochastic);
  } else if (key == "moments") {
    r.moments = parse_moment_format(value);
  } else if (key == "backward_from_forward") {
    edited = true;
    return parse_bool(key, value, r.linear.backward_from_forward_operands);
  } else if (key == "pad") {
    return parse_bool(key, value, r.pad);
  } else if (key == "model") {
    if (value != "scalify" && value != "linears")
      return "model is linears (float32 tensors, quantized linears) or scalify (every tensor scaled), not '" +
             std::string(value) + "'";
    r.scalify = value == "scalify";
  } else if (key.starts_with("scalify.")) {
    const std::string_view which = key.substr(8);
    Format accuracy::train::ScalifyConfig::*const fields[] = {
        &accuracy::train::ScalifyConfig::weight, &accuracy::train::ScalifyConfig::act,
        &accuracy::train::ScalifyConfig::grad, &accuracy::train::ScalifyConfig::fwd, &accuracy::train::ScalifyConfig::bwd};
    constexpr std::string_view names[] = {"weight", "act", "grad", "fwd", "bwd"};
    for (std::size_t i = 0; i < 5; ++i)
      if (which == names[i]) return r.scalify_formats.*fields[i] = parse_format(value), "";
    return "unknown key '" + std::string(key) + "' (scalify.weight, .act, .grad, .fwd, .bwd)";
  } else {
    return apply_gemm_key(r, key, value, edited);
  }
  return "";
}

// QuantLinear checks what its engine can run; a throwaway layer reports it at parse time.
void check_runs(const LinearRecipe& l, const std::string& recipe, const std::string& what) {
  try {
    quant::QuantLinear probe(l, 128, 128, false);
  } catch (const Error& e) {
    throw Error("train recipe '" + recipe + "': " + what + ": " + e.what());
  }
}

// The built-in recipes, as recipe text.
constexpr const char* kBuiltins[] = {
    R"(name = fp32
note = float32 everywhere: the reference
linear = fp32
classifier = fp32)",
    R"(name = bf16
note = bf16 operands and float32 accumulation in every linear; float32 master weights and moments
linear = bf16
classifier = bf16)",
    R"(name = bf16-pure
note = bf16 linears, bf16 master weights and bf16 moments, the update rounded to nearest (updates below half a bf16 spacing are lost)
linear = bf16
classifier = bf16
master = bf16
moments = bf16)",
    R"(name = bf16-pure-sr
note = bf16-pure with the weight update rounded stochastically to bf16
linear = bf16
classifier = bf16
master = bf16
master.sr = on
moments = bf16)",
    R"(name = fp8-tensorwise
note = torchao / TorchTitan Float8 tensorwise: E4M3 X and W, E5M2 dY, dynamic per-tensor scales
linear = fp8-tensorwise
classifier = bf16)",
    R"(name = fp8-rowwise
note = torchao Float8 rowwise: E4M3 everywhere, power-of-two scales per row of every operand
linear = fp8-rowwise
classifier = bf16)",
    R"(name = fp8-rowwise-gw-hp
note = torchao rowwise_with_gw_hp: fp8-rowwise forward, dgrad with W per tensor, weight gradient in high precision
linear = fp8-rowwise-gw-hp
classifier = bf16)",
    R"(name = fp8-delayed
note = TransformerEngine DelayedScaling (HYBRID): E4M3 forward, E5M2 gradients, per-tensor scales from a 1024-step amax history kept across steps
linear = fp8-delayed
classifier = bf16)",
    R"(name = fp8-current
note = TransformerEngine Float8CurrentScaling (HYBRID): E4M3 forward, E5M2 gradients, per-tensor scales from this step's amax
linear = fp8-tensorwise
classifier = bf16)",
    R"(name = mxfp8
note = OCP MXFP8 in all three GEMMs: E4M3, floor E8M0 scales per 32 (the OCP MX rule, as lowp eval's mxfp8), padded
linear = mxfp8
pad = on
classifier = bf16)",
    R"(name = mxfp8-te
note = TransformerEngine MXFP8BlockScaling: E4M3 everywhere, RCEIL E8M0 scales per 32, row- and column-wise copies from the float data, padded
linear = mxfp8-te
pad = on
classifier = bf16)",
    R"(name = fp8-block128
note = DeepSeek-V3: E4M3, 1x128 activation and gradient blocks, 128x128 weight tiles (zero-padded where a dimension is not a multiple of 128), 14-bit accumulator promoted to float32 every 128 products
linear = fp8-block128
pad = on
classifier = bf16)",
    R"(name = nvfp4
note = NVFP4 in all three GEMMs: E2M1, UE4M3 scale per 16 and a float32 tensor scale, round to nearest (as lowp eval's nvfp4), padded
linear = nvfp4
pad = on
classifier = bf16)",
    R"(name = nvfp4-train
note = NVIDIA NVFP4 training (TransformerEngine NVFP4BlockScaling): 16x16 weight tiles, 1x16 blocks, SR of gradients, 16-point Hadamard with TE's fixed signs on the wgrad operands; keep_last = N keeps the last layers in bf16
linear = nvfp4-train
pad = on
classifier = bf16)",
    R"(name = quartet-fp4
note = Quartet: MXFP4 in all three GEMMs; forward Hadamard 32 + QuEST clipping gating the gradient; backward re-quantizes the forward's W and X after Hadamard 32 with per-step random signs, SR
linear = quartet-fp4
classifier = bf16)",
    R"(name = quartet2-nvfp4
note = Quartet II: NVFP4 forward RTN with 4-over-6; backward random Hadamard + MS-EDEN
linear = quartet2-nvfp4
classifier = bf16)",
    R"(name = switchback-int8
note = SwitchBack: int8 GEMM for the forward and dgrad (row-wise X / dY, tensor-wise W), bf16 weight gradient
linear = switchback-int8
classifier = bf16)",
    R"(name = scalify
note = Scalify (Graphcore 2024): every tensor a scaled tensor with a propagated power-of-two scale; E4M3 weights and activations and E5M2 gradients into every GEMM, the other tensors scaled float16 (the paper's FP8 mix); fp16 moments
model = scalify
scalify.fwd = float16
scalify.bwd = float16
moments = fp16-scaled)",
};

std::string hp_line(const TrainRecipe& r) {
  std::string s = "embedding, RMSNorm, RoPE, attention matmuls, loss: f32; classifier: " + r.classifier.name;
  if (r.keep_first) s += "; first " + std::to_string(r.keep_first) + " layer(s): " + r.keep.name;
  if (r.keep_last) s += "; last " + std::to_string(r.keep_last) + " layer(s): " + r.keep.name;
  return s;
}

}  // namespace

namespace {

// The forward operands evaluation keys give (weights.<kind> -> W, act.<kind> -> X), over `l`,
// whose name then says so (the trainer keeps a classifier named fp32 out of QuantLinear).
void apply_forward_specs(quant::LinearRecipe& l, const accuracy::LayerSpecs& s, std::size_t kind, bool pad) {
  bool changed = false;
  for (auto [spec, operand] : {std::pair{&s.weights[kind], &l.fwd.b}, std::pair{&s.act[kind], &l.fwd.a}})
    if (*spec) {
      *operand = **spec;
      (*operand)->pad = (*operand)->pad || pad;
      changed = true;
    }
  if (changed) l.name += " with weights/act specs";
}

const quant::LinearRecipe& preset_for(const TrainRecipe& r, accuracy::LinearKind kind, std::size_t layer,
                                      std::size_t n_layers) {
  if (kind == LinearKind::classifier) return r.classifier;
  if (const auto it = r.per_layer.find(layer); it != r.per_layer.end()) return it->second;
  if (layer < r.keep_first || (r.keep_last > 0 && layer + r.keep_last >= n_layers)) return r.keep;
  const auto& k = r.per_kind[static_cast<std::size_t>(kind)];
  return k ? *k : r.linear;
}

}  // namespace

quant::LinearRecipe linear_for(const TrainRecipe& r, accuracy::LinearKind kind, std::size_t layer,
                               std::size_t n_layers) {
  quant::LinearRecipe l = preset_for(r, kind, layer, n_layers);
  if (kind != LinearKind::classifier)  // the classifier's took them at parse time
    apply_forward_specs(l, r.eval.specs_at(static_cast<int>(layer)), static_cast<std::size_t>(kind), r.pad);
  return l;
}

void apply_optimizer_settings(const TrainRecipe& r, OptimizerConfig& c) {
  c.kind = r.optimizer;
  c.master = r.master;
  c.master_stochastic = r.master_stochastic;
  c.moments = r.moments;
}

TrainRecipe parse_train_recipe(std::string_view text) {
  TrainRecipe r;
  r.text = std::string(text);
  r.eval = accuracy::parse_recipe(text);  // the evaluation keys of the same file (one language)
  r.linear = quant::linear_preset("fp32");
  r.keep = quant::linear_preset("bf16");
  r.classifier = quant::linear_preset("fp32");
  bool edited = false;  // GEMM keys changed `linear` after its preset
  accuracy::detail::read_key_values(text, "train recipe", [&](std::string_view key, std::string_view value) {
    return apply_line(r, key, value, edited);
  });
  if (r.name.empty()) throw Error("train recipe: no `name = ...` line");
  if (r.pad) {  // after every line, so it holds whatever order the keys came in
    const auto pad = [](quant::LinearRecipe& l) {
      for (quant::GemmRecipe* g : {&l.fwd, &l.dgrad, &l.wgrad})
        for (auto* op : {&g->a, &g->b})
          if (*op) (*op)->pad = true;
    };
    for (auto* l : {&r.linear, &r.keep, &r.classifier}) pad(*l);
    for (auto& k : r.per_kind)
      if (k) pad(*k);
    for (auto& [layer, l] : r.per_layer) pad(l);
  }
  if (edited) {
    r.linear.note = "composed per GEMM by train recipe '" + r.name + "'";
    r.linear.name = r.name;
  }
  apply_forward_specs(r.classifier, r.eval.specs_at(-1), static_cast<std::size_t>(LinearKind::classifier), r.pad);
  check_runs(r.linear, r.name, "linear");
  for (std::size_t k = 0; k < kLayerKinds; ++k) {  // the forward operands evaluation keys set
    const accuracy::LayerSpecs wide = r.eval.specs_at(-1);
    if (!wide.weights[k] && !wide.act[k]) continue;
    quant::LinearRecipe l = r.linear;
    apply_forward_specs(l, wide, k, r.pad);
    check_runs(l, r.name, "weights." + std::string(kind_name(k)) + " / act." + std::string(kind_name(k)));
  }
  check_runs(r.classifier, r.name, "classifier");
  if (!r.scalify && !(r.scalify_formats == accuracy::train::ScalifyConfig{}))
    throw Error("train recipe '" + r.name + "': scalify.* keys need `model = scalify`");
  return r;
}

std::span<const TrainRecipe> builtin_train_recipes() {
  static const std::vector<TrainRecipe> all = [] {
    std::vector<TrainRecipe> v;
    for (const char* t : kBuiltins) v.push_back(parse_train_recipe(t));
    return v;
  }();
  return all;
}

TrainRecipe find_train_recipe(std::string_view name_or_path) {
  static const std::vector<accuracy::detail::NamedText> eval_names = [] {
    std::vector<accuracy::detail::NamedText> v;
    for (const accuracy::Recipe& e : accuracy::builtin_recipes())
      if (std::none_of(builtin_train_recipes().begin(), builtin_train_recipes().end(),
                       [&](const TrainRecipe& t) { return t.name == e.name; }))
        v.push_back({e.name, accuracy::to_text(e)});
    return v;
  }();
  return accuracy::detail::find_builtin_or_file(name_or_path, builtin_train_recipes(), eval_names, parse_train_recipe,
                                                "train recipe");
}

// Scalify's GEMMs are the quant::matmul rule on scaled tensors (train/scalify_llama.cpp).
static std::string describe_scalify(const TrainRecipe& r) {
  std::string s;
  const accuracy::train::ScalifyConfig& f = r.scalify_formats;
  const std::string w = format_name(f.weight), a = format_name(f.act), g = format_name(f.grad),
                    fw = format_name(f.fwd), bw = format_name(f.bwd);
  s += "  fwd    X=" + a + " W=" + w + ", f32 accumulation, Y stored " + fw + "; scale sx*sw*p2(sqrt K), no amax\n";
  s += "  dgrad  dY=" + g + " W=" + w + ", f32 accumulation, dX stored " + bw + "; scale sdy*sw*p2(sqrt K)\n";
  s += "  wgrad  dY^T=" + g + " X=" + a + ", f32 accumulation, dW stored " + bw + "; scale sdy*sx*p2(sqrt rows)\n";
  s += "  every linear, the embedding, the classifier, the attention matmuls (QK^T, PV) and their gradients alike;\n";
  s += "  RMSNorm, RoPE, softmax, SwiGLU and the residual adds: scaled-tensor ops with their own scale rules, results\n";
  s += "  stored " + fw + " (forward) and " + bw + " (backward)\n";
  s += "  measured scales: p2(RMS) of each master weight once per step; RMS rescale of the gradient leaving each RMSNorm\n";
  s += "  high precision: the loss (double, from the E4M3 logits), the float32 master weights\n";
  s += "  optimizer " + std::string(name(r.optimizer)) + ", master " + std::string(name(r.master)) +
       ", moments " + std::string(name(r.moments)) + "\n";
  return s;
}

std::string describe(const TrainRecipe& r) {
  if (r.scalify) return describe_scalify(r);
  const quant::GemmDescription d = quant::describe_gemms(r.linear);
  std::string s;
  s += "  fwd    " + d.fwd + "\n";
  s += "  dgrad  " + d.dgrad + "\n";
  s += "  wgrad  " + d.wgrad + "\n";
  for (std::size_t i = 0; i < kLayerKinds; ++i)
    if (r.per_kind[i]) s += "  " + std::string(kind_name(i)) + ": " + r.per_kind[i]->name + "\n";
  for (const auto& [layer, l] : r.per_layer) s += "  layer " + std::to_string(layer) + ": " + l.name + "\n";
  if (r.pad) s += "  blocks and tiles a dimension does not divide: zero-padded\n";
  s += "  high precision: " + hp_line(r) + "\n";
  s += "  optimizer " + std::string(name(r.optimizer)) + ", master " + std::string(name(r.master)) +
       (r.master_stochastic ? " (stochastic rounding)" : "") + ", moments " + std::string(name(r.moments)) + "\n";
  return s;
}

}  // namespace lowp::train
