// How a `lowp` subcommand plugs into run_cli (private to the CLI).
//
// A subcommand lives in its own cli_<name>.cpp: one add_<name>_command function adds a CLI11
// subcommand with its options and returns the action to run when that subcommand was chosen.
// Adding one is that file, its add_<name>_command declaration below and one line in the list
// in run_cli.cpp.
#pragma once
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "lowp/accuracy/calibrate.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "cli/version.hpp"
#include "lowp/formats/format.hpp"

namespace lowp::cli {

// Exit status of `lowp`.
inline constexpr int exit_ok = 0;
inline constexpr int exit_bad_data = 1;  // a bad input line (unparsable value, invalid code)
inline constexpr int exit_usage = 2;     // bad command line: option, format or rounding mode

struct Io {
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
};

// Thrown by an action; run_cli prints "lowp <command>: <message>" as the one stderr line.
struct Failure {
  int exit_code;
  std::string message;
};

using Action = std::function<int(Io&)>;

struct Command {
  CLI::App* app;  // the subcommand, owned by the parent CLI::App
  Action run;
};

Command add_formats_command(CLI::App& parent);
Command add_cast_command(CLI::App& parent);
Command add_decode_command(CLI::App& parent);
Command add_golden_command(CLI::App& parent);
Command add_eval_command(CLI::App& parent);
Command add_recipes_command(CLI::App& parent);
Command add_sweep_command(CLI::App& parent);
Command add_search_command(CLI::App& parent);
Command add_tokenize_command(CLI::App& parent);
Command add_train_command(CLI::App& parent);
Command add_probe_command(CLI::App& parent);
Command add_generate_command(CLI::App& parent);


// --- Helpers shared by the subcommands (text.cpp) ---

// eval and sweep --model: a given --ctx must lie in [2, max_ctx] (absent, the default applies);
// one warning line on `err` when it exceeds the model's seq_len.
inline constexpr int max_ctx = 1 << 20;
void check_ctx_option(const std::optional<int>& ctx, int seq_len, std::ostream& err);

// --bos on|off|auto (auto: `when_auto`); a usage Failure for anything else.
bool bos_option(const std::string& value, bool when_auto);
// eval and sweep --model: token ids from `tokens_path` (checked against `vocab`), or the text
// file `text_path` through the model's tokenizer (`model_path` locates it): the ids of the text file (BOS first when --bos resolves to on, auto
// following the tokenizer's add_bos as llama.cpp's perplexity tool does) and the id each
// window's first token is replaced with (-1: none). With --tokens the ids are used as given.
struct EvalTokens {
  std::vector<int> ids;
  int window_bos = -1;
};
EvalTokens read_eval_tokens(const std::string& tokens_path, const std::string& text_path, const std::string& model_path,
                            int vocab, const std::string& bos);

// --calib FILE, --imatrix FILE.dat, --calib-cache DIR (calib_args.cpp): the calibration text
// of recipes with weights.calibrate or static scales, tokenized as the evaluation text (same --bos).
struct CalibArgs {
  std::string calib, imatrix, cache;
};
void add_calib_options(CLI::App* app, CalibArgs& a);
// nullptr without --calib (--imatrix alone: usage Failure). `model_path` as resolved; notes
// (a corrupt cache file ignored) go to `err`.
std::shared_ptr<const accuracy::CalibrationText> calibration_text(const CalibArgs& a, const std::string& model_path,
                                                                  int vocab, const std::string& bos, std::ostream& err);
// A recipe with weights.calibrate and no calibration text (--calib or --imatrix), or with a
// static act.scale / attn.scale and no calibration tokens: a usage Failure, one line naming the
// key and --calib FILE.
void require_calibration(const accuracy::Recipe& r, const accuracy::CalibrationText* text);
// The first run of k = min(64, both sizes) consecutive tokens of `eval` that also occurs in
// `calib`, as "<k> consecutive tokens in common from evaluation token <i>"; empty when the
// texts share none.
std::string first_overlap(const std::vector<int>& calib, const std::vector<int>& eval);
// eval and sweep: one warning line on `err` when the texts overlap (the KLD is then not measured
// on held-out text); search refuses such an --eval instead.
void warn_if_overlap(const std::vector<int>& calib, const std::vector<int>& eval, std::ostream& err);

// --max-memory (max_memory.cpp): the option, and setting the process-wide budget from it
// (empty: the default); a malformed size is a usage Failure.
void add_max_memory_option(CLI::App* app, std::string& value);
void apply_max_memory(const std::string& value);

// parse_format, with its lowp::Error turned into a usage Failure.
Format format_option(const std::string& name);
// The format grammar (lowp::format_grammar()) and what each part means: cast's and decode's help.
std::string format_help();

// Calls `convert(text, k)` for each stdin line k (0-based), `text` trimmed of surrounding
// whitespace, and writes the returned line to stdout. An empty line, or a line whose
// conversion throws Failure or lowp::Error, stops the loop: Failure{exit_bad_data,
// "line <k+1>: <message>"} is thrown and nothing more is written.
void for_each_line(Io& io, const std::function<std::string(std::string_view text, std::size_t k)>& convert);

// `text` quoted for an error message: 'text', control bytes as \xNN, long text shortened.
std::string quote_input(std::string_view text);

// "0x" + the code in lowercase hex, ceil(bits/4) digits.
std::string hex_code(const Format& f, std::uint32_t code);
// The shortest decimal that reads back as exactly `v`; nan, inf, -inf, -0.
std::string exact_decimal(double v);
// "<hex code> <decoded value>", the output line of cast and decode.
std::string code_and_value(const Format& f, std::uint32_t code);

// --- Numeric options ---

// The range check of every numeric option, one message for all: a usage Failure
// "<option> <value> is outside [<lo>, <hi>]<note>" unless lo <= value <= hi.
template <class T>
void check_range(std::string_view option, T value, std::type_identity_t<T> lo, std::type_identity_t<T> hi,
                 std::string_view note = {}) {
  if (value < lo || value > hi)
    throw Failure{exit_usage, std::string(option) + " " + std::to_string(value) + " is outside [" +
                                  std::to_string(lo) + ", " + std::to_string(hi) + "]" + std::string(note)};
}
// A numeric option converted and range-checked by lowp rather than CLI11 (which would also
// take octal "010" and wrap "-1" into an unsigned): decimal digits with an optional '-', and
// the check_range message for a value outside [lo, hi] (the type's range included). Thrown
// while parsing, as a CLI11 ValidationError holding exactly that message.
template <class T>
T parse_number(const std::string& option, const std::string& text, T lo, T hi) {
  static_assert(std::is_integral_v<T>);
  T v{};
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [end, ec] = std::from_chars(first, last, v);
  const bool digits = !text.empty() && text.find_first_not_of("0123456789", text[0] == '-' ? 1 : 0) == std::string::npos &&
                      text != "-";
  if (!digits) throw CLI::ValidationError(option + " " + quote_input(text) + " is not a decimal integer");
  if (ec != std::errc{} || end != last || v < lo || v > hi)  // out of T's range, or a minus sign on unsigned T
    throw CLI::ValidationError(option + " " + text + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}
template <class T, class Target>
CLI::Option* add_number_option(CLI::App* app, const std::string& option, Target& target, std::type_identity_t<T> lo,
                               std::type_identity_t<T> hi, const std::string& help) {
  return app->add_option_function<std::string>(
             option, [&target, option, lo, hi](const std::string& text) { target = parse_number<T>(option, text, lo, hi); },
             help)
      ->type_name(std::is_signed_v<T> ? "INT" : "UINT");
}

// --threads: 0 (all, as the help says) up to this many.
inline constexpr int max_threads = 1024;

}  // namespace lowp::cli
