// `lowp recipes`: the built-in evaluation recipes and the linear-layer presets.
#include <algorithm>
#include <memory>
#include <ostream>
#include <string>

#include "cli/command.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/linear.hpp"
#include "train/train_recipe.hpp"

namespace lowp::cli {
namespace {

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
