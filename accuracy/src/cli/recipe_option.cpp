// --recipe NAME|FILE of the commands that evaluate (eval, sweep, generate).
#include "cli/recipe_option.hpp"

#include <vector>

#include "cli/command.hpp"
#include "lowp/numerics/error.hpp"
#include "recipe/key_value.hpp"
#include "recipe/recipe_notes.hpp"

namespace lowp::cli {

accuracy::Recipe recipe_option(const std::string& name, std::string_view command, std::ostream& err) {
  std::vector<std::string> training_keys;
  accuracy::Recipe r;
  try {
    r = accuracy::detail::find_recipe_noting(name, training_keys);
  } catch (const Error& e) {
    throw Failure{exit_usage, e.what()};
  }
  if (const std::string note = accuracy::detail::not_applying(training_keys, r.name, command,
                                                              "they set the backward, optimizer or training-only parts");
      !note.empty())
    err << "lowp " << command << ": note: " << note << "\n";
  return r;
}

}  // namespace lowp::cli
