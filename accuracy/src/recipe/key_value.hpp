// The one reader of `key = value` text (private to lowp_accuracy): evaluation recipes, training
// recipes and a training run's train.cfg.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace lowp::accuracy::detail {

// Calls apply(key, value) for every line of `text` that is neither blank nor a whole-line `#`
// comment, key and value trimmed of white space (the value may hold '='; the key ends at the
// first). A key given on two lines, a line without '=', or an apply() that returns a non-empty reason or throws
// lowp::Error, stops with lowp::Error("<what> line <N> '<line, trimmed>': <reason>").
void read_key_values(std::string_view text, std::string_view what,
                     const std::function<std::string(std::string_view key, std::string_view value)>& apply);

// The keys every recipe has, `name` (not empty) and `note` (one line): sets `name` or `note` and
// returns true, with `why` set when the value is refused; false for any other key.
bool apply_name_or_note(std::string_view key, std::string_view value, std::string& name, std::string& note,
                        std::string& why);

// One recipe language (docs/recipes.md): a file may hold evaluation keys (weights.*, act.*,
// attn.*, kv*, quarot, seed, weights.calibrate*, layer.<N>.<key>) and training keys (the ones
// below); each command applies those it has a meaning for and names the others in one note.
// True for a key only training reads: fwd/dgrad/wgrad[.*], linear.<kind>, layer.<i>, keep*,
// classifier, optimizer, master[.sr], moments, backward_from_forward, model, scalify.*.
bool is_training_key(std::string_view key);
// name, note, linear and pad: read by every command.
bool is_shared_key(std::string_view key);
// "recipe '<recipe>': <keys> do not apply to <command> (<why>); ignored", or "" when `keys` is
// empty: the one line a command prints about the keys of a file it does not apply.
std::string not_applying(const std::vector<std::string>& keys, std::string_view recipe, std::string_view command,
                         std::string_view why);

// on/true/yes/1 and off/false/no/0; false when `v` is none of them.
bool parse_on_off(std::string_view v, bool& out);

}  // namespace lowp::accuracy::detail
