// The lookup behind --recipe NAME|FILE, for evaluation and training recipes alike: a built-in
// name, else a recipe file at that path, else one line listing the built-ins.
#pragma once
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {

// `what` names the kind in errors ("recipe", "train recipe"); parse(text) reads a file's text.
template <class Recipe, class Parse>
Recipe find_builtin_or_file(std::string_view name_or_path, std::span<const Recipe> builtins, Parse parse,
                            const std::string& what) {
  for (const Recipe& r : builtins)
    if (r.name == name_or_path) return r;
  if (std::ifstream f{std::string(name_or_path)}) {
    std::ostringstream text;
    text << f.rdbuf();
    try {
      return parse(text.str());
    } catch (const Error& e) {
      throw Error(std::string(name_or_path) + ": " + e.what());
    }
  }
  std::string names;
  for (const Recipe& r : builtins) names += (names.empty() ? "" : ", ") + r.name;
  throw Error("unknown " + what + " '" + std::string(name_or_path) + "' (not a built-in name nor a readable file); built-in " +
              what + "s: " + names);
}

}  // namespace lowp::accuracy::detail
