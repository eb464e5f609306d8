// --recipe NAME|FILE of eval, sweep and generate (recipe_option.cpp).
#pragma once
#include <ostream>
#include <string>
#include <string_view>

#include "lowp/accuracy/recipe.hpp"

namespace lowp::cli {

// The recipe, with its lowp::Error turned into a usage Failure; the keys of the file only
// training reads are named in one note line on `err` ("lowp <command>: note: ...").
accuracy::Recipe recipe_option(const std::string& name, std::string_view command, std::ostream& err);

}  // namespace lowp::cli
