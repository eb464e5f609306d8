// An evaluation recipe: where the Llama forward pass quantizes, and how. A recipe is data,
// written in a small documented text format (docs/recipes.md); the built-in ones are listed
// by `lowp recipes`.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include "lowp/quant/quantize.hpp"

namespace lowp::accuracy {

struct Recipe {
  std::string name;
  std::string note;  // one line
  // (The quantization points, linear preset and rotations: see recipe.hpp's full definition
  // in the evaluator issue; fields are added here.)
};

// Parses the text format; throws lowp::Error naming the line on anything malformed.
Recipe parse_recipe(std::string_view text);
std::span<const Recipe> builtin_recipes();
// A built-in name, or a path to a recipe file. Throws lowp::Error listing the names.
Recipe find_recipe(std::string_view name_or_path);
// The list `lowp sweep` runs when --recipes is not given.
std::vector<std::string> default_sweep_recipes();

}  // namespace lowp::accuracy
