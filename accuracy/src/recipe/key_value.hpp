// The one reader of `key = value` text (private to lowp_accuracy): evaluation recipes, training
// recipes and a training run's train.cfg.
#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace lowp::accuracy::detail {

// Calls apply(key, value) for every line of `text` that is neither blank nor a whole-line `#`
// comment, key and value trimmed of white space (the value may hold '='; the key ends at the
// first). A line without '=', or an apply() that returns a non-empty reason or throws
// lowp::Error, stops with lowp::Error("<what> line <N> '<line, trimmed>': <reason>").
void read_key_values(std::string_view text, std::string_view what,
                     const std::function<std::string(std::string_view key, std::string_view value)>& apply);

// The keys every recipe has, `name` (not empty) and `note` (one line): sets `name` or `note` and
// returns true, with `why` set when the value is refused; false for any other key.
bool apply_name_or_note(std::string_view key, std::string_view value, std::string& name, std::string& note,
                        std::string& why);

// on/true/yes/1 and off/false/no/0; false when `v` is none of them.
bool parse_on_off(std::string_view v, bool& out);

}  // namespace lowp::accuracy::detail
