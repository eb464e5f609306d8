// `lowp recipes`: the built-in evaluation recipes and the linear-layer presets.
#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

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

template <class Range>
std::size_t name_width(const Range& items) {
  std::size_t w = 0;
  for (const auto& i : items) w = std::max(w, i.name.size());
  return w;
}

int run_recipes(Io& io, const std::string& show) {
  if (!show.empty()) {
    try {
      io.out << accuracy::to_text(accuracy::find_recipe(show));
    } catch (const Error& e) {
      throw Failure{exit_usage, e.what()};
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
  io.out << "\nTraining recipes (lowp train --recipe; per GEMM of the layer linears; docs/training.md):\n";
  for (const auto& r : train::builtin_train_recipes()) io.out << r.name << ": " << r.note << "\n" << train::describe(r);
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
