// Evaluation recipes with the keys of their file that only training reads (private to
// lowp_accuracy): the commands that evaluate name those keys in one note (docs/recipes.md, "One
// recipe language"); lowp::accuracy::parse_recipe / find_recipe drop them.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "lowp/accuracy/recipe.hpp"

namespace lowp::accuracy::detail {

// parse_recipe, the training-only keys appended to `training_keys` in file order.
Recipe parse_recipe_noting(std::string_view text, std::vector<std::string>& training_keys);
// find_recipe, likewise (an evaluation built-in has none).
Recipe find_recipe_noting(std::string_view name_or_path, std::vector<std::string>& training_keys);

}  // namespace lowp::accuracy::detail
