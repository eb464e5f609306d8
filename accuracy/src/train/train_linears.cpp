// lowp/accuracy/train_linears.hpp over the training recipes.
#include "lowp/accuracy/train_linears.hpp"

#include "lowp/numerics/error.hpp"
#include "recipe/train_recipe.hpp"

namespace lowp::accuracy {

TrainLinears train_recipe_linears(std::string_view name_or_path) {
  const lowp::train::TrainRecipe r = lowp::train::find_train_recipe(name_or_path);
  if (r.scalify)
    throw Error("train recipe '" + r.name + "' runs the whole model on scaled tensors (model = scalify): it has no linear layer recipe");
  return TrainLinears{r.name, r.note, r.linear, r.keep, r.keep_first, r.keep_last};
}

std::vector<std::string> train_recipe_names() {
  std::vector<std::string> names;
  for (const lowp::train::TrainRecipe& r : lowp::train::builtin_train_recipes()) names.push_back(r.name);
  return names;
}

}  // namespace lowp::accuracy
