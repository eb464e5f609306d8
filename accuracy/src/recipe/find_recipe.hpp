// The lookup behind --recipe NAME|FILE, for evaluation and training alike: one namespace of
// built-in names (evaluation's and training's, each name one meaning), else a recipe file.
#pragma once
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {

struct NamedText {
  std::string name, text;  // a built-in recipe of the other command, in the recipe text format
};

// `builtins` first, then `others` (the other command's built-ins, parsed as this command reads
// them), then a file. `what` names the kind in errors ("recipe", "train recipe"); parse(text)
// reads a text. An argument with a '/' or a '.' is a path (no built-in name has either): a
// missing one is reported as such, not as an unknown name.
template <class Recipe, class Parse>
Recipe find_builtin_or_file(std::string_view name_or_path, std::span<const Recipe> builtins,
                            const std::vector<NamedText>& others, Parse parse, const std::string& what) {
  for (const Recipe& r : builtins)
    if (r.name == name_or_path) return r;
  for (const NamedText& o : others)
    if (o.name == name_or_path) return parse(o.text);
  const std::string arg(name_or_path);
  if (std::ifstream f{arg}; f && !std::filesystem::is_directory(arg)) {
    std::ostringstream text;
    text << f.rdbuf();
    try {
      return parse(text.str());
    } catch (const Error& e) {
      throw Error(arg + ": " + e.what());
    }
  }
  if (arg.find_first_of("/.") != std::string::npos)
    throw Error(what + " file '" + arg + "' " +
                (std::filesystem::exists(arg) ? "cannot be read as a file" : "does not exist"));
  std::string names;
  for (const Recipe& r : builtins) names += (names.empty() ? "" : ", ") + r.name;
  for (const NamedText& o : others) names += ", " + o.name;
  throw Error("unknown " + what + " '" + arg + "' (not a built-in name nor a readable file); built-in names: " + names);
}

}  // namespace lowp::accuracy::detail
