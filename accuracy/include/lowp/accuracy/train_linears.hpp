// What a training recipe asks of its linear layers, for callers outside lowp's own trainer
// (the Python module's lowp.torch.Linear): the recipe of every linear inside the layers, and
// the one of the layers it keeps in high precision.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lowp/quant/linear.hpp"

namespace lowp::accuracy {

struct TrainLinears {
  std::string name, note;
  quant::LinearRecipe linear;      // every linear inside the layers
  quant::LinearRecipe keep;        // the first keep_first / last keep_last layers
  std::size_t keep_first = 0, keep_last = 0;
  // For a recipe file (or an evaluation built-in): one line naming the keys lowp.torch does not
  // apply (per-linear and per-layer keys, optimizer, attention, ...); empty otherwise.
  std::string note_for_torch;
};

// A built-in recipe name (`lowp recipes`) or a recipe file; its linear is the layer linears'
// recipe, with the forward operands of recipe-wide weights / act keys when all seven agree. Throws lowp::Error listing
// the names when unknown, and for `model = scalify` recipes (no linear layers of their own).
TrainLinears train_recipe_linears(std::string_view name_or_path);
// The built-in training recipe names, in `lowp recipes` order.
std::vector<std::string> train_recipe_names();

}  // namespace lowp::accuracy
