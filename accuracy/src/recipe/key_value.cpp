// The `key = value` reader shared by every recipe format and train.cfg.
#include "recipe/key_value.hpp"

#include <cctype>

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
    std::string why;
    try {
      why = apply(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
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

}  // namespace lowp::accuracy::detail
