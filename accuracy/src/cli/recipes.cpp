// `lowp recipes`: the built-in evaluation recipes and the linear-layer presets.
#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/linear.hpp"
#include "lowp/quant/scale_rules.hpp"
#include "recipe/train_recipe.hpp"

namespace lowp::cli {
namespace {

// Shown under the list; docs/recipes.md holds the same paragraph (a test keeps them equal).
constexpr std::string_view kMxScaleNote =
    "MX scales, floor or RCEIL. The OCP MX spec (v1.0) sets a block's E8M0 scale to\n"
    "2^(floor(log2 amax) - emax), emax the element format's largest exponent (8 for E4M3, 2 for E2M3\n"
    "and E2M1). amax/scale then lies in [2^emax, 2^(emax+1)): up to 512 against E4M3's largest\n"
    "value 448, up to 8 against 7.5 (E2M3) and 6 (E2M1), so the top of a block clips to the largest\n"
    "value: on stories260K (../shared) mxfp8 ranks below mxfp6 and fp8-tensorwise for it. RCEIL, which\n"
    "TransformerEngine and the MXFP8 pre-training recipe use, rounds the scale up instead: the\n"
    "smallest 2^e with 2^e x largest >= amax, so nothing clips, at the cost of coarser steps when\n"
    "amax/largest sits just above a power of two. The `*-rceil` recipes are the MX ones with this rule\n"
    "(QuantSpec rule `rceil`).\n";

constexpr std::string_view kStaticScaleNote =
    "Static scales (recipe keys act.scale and attn.scale; docs/recipes.md, \"Static scales\"): dynamic,\n"
    "the default, scales each tensor by its own amax. static (= static:amax) or static:p<percentile>\n"
    "fixes the tensor-level scale of the linears' inputs (act.scale) or of attn.q/k/v and kv\n"
    "(attn.scale) once per point and layer, from the amax or percentile of |x| over the --calib text\n"
    "(cached under --calib-cache): fp8-tensorwise, nvfp4 and fp8-attn then decode with the KV cache.\n";

template <class Range>
std::size_t name_width(const Range& items) {
  std::size_t w = 0;
  for (const auto& i : items) w = std::max(w, i.name.size());
  return w;
}

// --- What each name does, per part of the model (one namespace, docs/recipes.md) ---

constexpr auto kClassifier = static_cast<std::size_t>(accuracy::LinearKind::classifier);

std::string spec_text(const std::optional<quant::QuantSpec>& s) { return s ? quant::describe(*s) : "f32"; }

// Attention as evaluation runs it (training's attention matmuls are float32).
std::string attention_text(const accuracy::Recipe& e) {
  if (!e.q && !e.k && !e.p && !e.v && e.attn_rotate == accuracy::AttnRotation::none) return "f32";
  std::string s = "Q=" + spec_text(e.q) + " K=" + spec_text(e.k) + " P=" + spec_text(e.p) + " V=" + spec_text(e.v);
  if (e.p_form == accuracy::AttnPForm::fa3) s += " (P as FA3: 2^8 exp(S - rowmax), divided after PV)";
  if (e.attn_rotate != accuracy::AttnRotation::none)
    s += std::string(" rot=") + (e.attn_rotate == accuracy::AttnRotation::hadamard ? "hadamard" : "randomized") +
         (e.rotate_v ? " (Q, K and V)" : " (Q and K)");
  return s;
}

std::string kv_text(const accuracy::Recipe& e) {
  if (!e.kv) return "f32";
  return spec_text(e.kv) + (e.kv_per_head ? ", one scale per head and token" : "");
}

// One block per name of the union of the evaluation and training built-ins: its forward (the
// same in every command), the backward GEMMs training runs, attention and KV cache as
// evaluation runs them, and the classifier in each.
void print_name_parts(Io& io) {
  std::vector<std::string> names;
  for (const auto& r : accuracy::builtin_recipes()) names.push_back(r.name);
  for (const auto& r : train::builtin_train_recipes())
    if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
  io.out << "\nWhat each name does (one namespace: eval, sweep, search, generate, train, lowp.QuantLinear for\n"
            "presets, lowp.eval, lowp.torch; f32 = not quantized):\n";
  for (const std::string& name : names) {
    const train::TrainRecipe t = train::find_train_recipe(name);
    std::optional<accuracy::Recipe> e;
    for (const auto& r : accuracy::builtin_recipes())
      if (r.name == name) e = r;
    std::string where = e ? "evaluation, training" : "training only";
    for (const auto& p : quant::linear_presets())
      if (p.name == name) where += ", linear preset";
    io.out << name << " (" << where << ")\n";
    if (t.scalify) {
      io.out << "    every tensor scaled (model = scalify): the training section above\n";
      continue;
    }
    const quant::LinearRecipe l = train::linear_for(t, accuracy::LinearKind::wq, 0, 1);
    const quant::GemmDescription g = quant::describe_gemms(l);
    // Evaluation runs the forward's specs and rotation with float32 accumulation (docs/recipes.md).
    const bool acc = e && l.fwd.accumulation;
    io.out << "    fwd        " << g.fwd << (e && e->quarot ? " (QuaRot-rotated model)" : "")
           << (acc ? " (evaluation: float32 accumulation)" : "") << "\n"
           << "    dgrad      " << g.dgrad << " (training)\n"
           << "    wgrad      " << g.wgrad << " (training)\n"
           << "    attention  " << (e ? attention_text(*e) : "f32") << (e ? "; training: f32" : "") << "\n"
           << "    KV cache   " << (e ? kv_text(*e) : "f32 (no KV cache in training)") << "\n"
           << "    classifier " << (e ? "evaluation X=" + spec_text(e->act[kClassifier]) + " W=" + spec_text(e->weights[kClassifier]) + "; " : "")
           << "training " << t.classifier.name << "\n";
  }
}

int run_recipes(Io& io, const std::string& show) {
  if (!show.empty()) {
    try {
      io.out << accuracy::to_text(accuracy::find_recipe(show));
    } catch (const Error& e) {
      // A training-only name (bf16-pure, quartet-fp4, ...): its own text.
      bool training = false;
      for (const auto& r : train::builtin_train_recipes())
        if (r.name == show) io.out << r.text << "\n", training = true;
      if (!training) throw Failure{exit_usage, e.what()};
    }
    return exit_ok;
  }
  const auto recipes = accuracy::builtin_recipes();
  const auto sweep = accuracy::default_sweep_recipes();
  std::size_t w = name_width(recipes);
  io.out << "Evaluation recipes (lowp eval --recipe, lowp sweep --recipes; * = in the default sweep):\n";
  for (const auto& r : recipes) {
    const bool in_sweep = std::find(sweep.begin(), sweep.end(), r.name) != sweep.end();
    io.out << (in_sweep ? "* " : "  ") << r.name << std::string(w + 2 - r.name.size(), ' ') << r.note << "\n";
  }
  const auto presets = quant::linear_presets();
  w = name_width(presets);
  io.out << "\nLinear presets (recipe key `linear = <name>`):\n";
  for (const auto& p : presets) io.out << "  " << p.name << std::string(w + 2 - p.name.size(), ' ') << p.note << "\n";
  io.out << "\n" << kStaticScaleNote;
  io.out << "\nTraining recipes (lowp train --recipe; per GEMM of the layer linears; docs/training.md):\n";
  for (const auto& r : train::builtin_train_recipes()) io.out << r.name << ": " << r.note << "\n" << train::describe(r);
  print_name_parts(io);
  io.out << "\nScale rules by stack (spec rule names; docs/quantization.md, \"Each stack's scale rule\"):\n";
  for (const auto& r : quant::stack_scale_rules())
    io.out << "  " << r.stack << " -> " << r.rule << " (" << r.code << "; " << r.vs_default << ")\n";
  io.out << "\n" << kMxScaleNote;
  return exit_ok;
}

}  // namespace

Command add_recipes_command(CLI::App& parent) {
  auto show = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand("recipes", "List the built-in evaluation recipes and linear-layer presets");
  app->add_option("--show", *show, "Print one recipe (a built-in name or a file) in the recipe text format");
  app->footer("Recipe text format: docs/recipes.md.");
  return {app, [show](Io& io) { return run_recipes(io, *show); }};
}

}  // namespace lowp::cli
