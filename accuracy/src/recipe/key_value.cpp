// The `key = value` reader shared by every recipe format and train.cfg.
#include "recipe/key_value.hpp"

#include <cctype>
#include <map>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

void read_key_values(std::string_view text, std::string_view what,
                     const std::function<std::string(std::string_view key, std::string_view value)>& apply) {
  std::size_t line_no = 0;
  std::map<std::string, std::size_t, std::less<>> seen;  // key -> the line that set it
  while (!text.empty()) {
    ++line_no;
    const std::size_t nl = text.find('\n');
    const std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;  // whole-line comments only
    const auto fail = [&](const std::string& why) {
      return Error(std::string(what) + " line " + std::to_string(line_no) + " '" + std::string(line) + "': " + why);
    };
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) throw fail("expected `key = value`");
    const std::string_view key = trim(line.substr(0, eq));
    // A second line for a key would silently win over the first: refuse it.
    if (const auto [it, fresh] = seen.try_emplace(std::string(key), line_no); !fresh)
      throw fail("key '" + std::string(key) + "' is already set on line " + std::to_string(it->second));
    std::string why;
    try {
      why = apply(key, trim(line.substr(eq + 1)));
    } catch (const Error& e) {
      why = e.what();
    }
    if (!why.empty()) throw fail(why);
  }
}

bool apply_name_or_note(std::string_view key, std::string_view value, std::string& name, std::string& note,
                        std::string& why) {
  if (key == "name") {
    if (value.empty()) why = "empty name";
    else name = value;
  } else if (key == "note") {
    note = value;
  } else {
    return false;
  }
  return true;
}

bool parse_on_off(std::string_view v, bool& out) {
  if (v == "on" || v == "true" || v == "yes" || v == "1") return out = true, true;
  if (v == "off" || v == "false" || v == "no" || v == "0") return out = false, true;
  return false;
}

bool is_training_key(std::string_view key) {
  static constexpr std::string_view whole[] = {"fwd", "dgrad", "wgrad", "optimizer", "master", "master.sr", "moments",
                                               "keep", "keep_first", "keep_last", "classifier", "backward_from_forward",
                                               "model"};
  for (const std::string_view w : whole)
    if (key == w) return true;
  for (const std::string_view p : {"fwd.", "dgrad.", "wgrad.", "linear.", "scalify."})
    if (key.starts_with(p)) return true;
  // layer.<i> = <preset> (training) against layer.<N>.<key> (both)
  if (!key.starts_with("layer.") || key.size() == 6) return false;
  for (const char c : key.substr(6))
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool is_shared_key(std::string_view key) { return key == "name" || key == "note" || key == "linear" || key == "pad"; }

std::string not_applying(const std::vector<std::string>& keys, std::string_view recipe, std::string_view command,
                         std::string_view why) {
  if (keys.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < keys.size() && i < 6; ++i) list += (i ? ", " : "") + keys[i];
  if (keys.size() > 6) list += " and " + std::to_string(keys.size() - 6) + " more";
  return "recipe '" + std::string(recipe) + "': " + list + (keys.size() == 1 ? " does" : " do") + " not apply to " +
         std::string(command) + " (" + std::string(why) + "); ignored";
}

}  // namespace lowp::accuracy::detail
