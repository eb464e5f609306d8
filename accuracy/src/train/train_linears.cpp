// lowp/accuracy/train_linears.hpp over the training recipes.
#include "lowp/accuracy/train_linears.hpp"

#include "lowp/numerics/error.hpp"
#include "recipe/key_value.hpp"
#include "recipe/train_recipe.hpp"

namespace lowp::accuracy {

namespace {

// The keys lowp.torch has no meaning for: it converts modules it cannot place in a layer or a
// linear kind (one recipe for all, its own keep_first/keep_last), and leaves the optimizer and
// the attention to PyTorch. Recipe-wide weights / act apply when every layer linear has the same.
std::vector<std::string> keys_not_for_torch(const lowp::train::TrainRecipe& r, bool uniform_forward) {
  std::vector<std::string> keys;
  detail::read_key_values(r.text, "recipe", [&](std::string_view key, std::string_view) {
    const bool forward_operand = (key.starts_with("weights") || key.starts_with("act") ||
                                  (key.starts_with("layer.") && key.find('.', 6) != std::string_view::npos)) &&
                                 !key.starts_with("weights.calibrate");
    if (detail::is_shared_key(key) || key.starts_with("fwd") || key.starts_with("dgrad") || key.starts_with("wgrad") ||
        key == "backward_from_forward" || (forward_operand && uniform_forward && !key.starts_with("layer.")))
      return std::string();
    keys.emplace_back(key);
    return std::string();
  });
  return keys;
}

}  // namespace

TrainLinears train_recipe_linears(std::string_view name_or_path) {
  const lowp::train::TrainRecipe r = lowp::train::find_train_recipe(name_or_path);
  if (r.scalify)
    throw Error("train recipe '" + r.name + "' runs the whole model on scaled tensors (model = scalify): it has no linear layer recipe");
  // The layer linears' forward operands from recipe-wide weights.<kind> / act.<kind>: one
  // recipe when they agree for all seven kinds.
  lowp::train::TrainRecipe flat = r;  // without its per-layer and per-kind choices
  flat.per_layer.clear();
  flat.per_kind = {};
  flat.keep_first = flat.keep_last = 0;
  std::vector<quant::LinearRecipe> kinds;
  for (std::size_t k = 0; k < 7; ++k) kinds.push_back(lowp::train::linear_for(flat, static_cast<LinearKind>(k), 0, 1));
  bool uniform = r.eval.layer.empty();
  for (const auto& l : kinds) uniform = uniform && quant::describe(l) == quant::describe(kinds[0]);
  TrainLinears t{r.name, r.note, uniform ? kinds[0] : r.linear, r.keep, r.keep_first, r.keep_last, {}};
  bool own_builtin = false;
  for (const auto& b : lowp::train::builtin_train_recipes()) own_builtin = own_builtin || b.name == name_or_path;
  if (!own_builtin)
    t.note_for_torch = detail::not_applying(keys_not_for_torch(r, uniform), r.name, "lowp.torch",
                                            "one recipe for every converted module; optimizer and attention are "
                                            "PyTorch's; keep_first/keep_last are convert()'s arguments");
  return t;
}

std::vector<std::string> train_recipe_names() {
  std::vector<std::string> names;
  for (const lowp::train::TrainRecipe& r : lowp::train::builtin_train_recipes()) names.push_back(r.name);
  return names;
}

}  // namespace lowp::accuracy
