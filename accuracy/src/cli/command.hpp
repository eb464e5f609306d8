// How a `lowp` subcommand plugs into run_cli (private to the CLI).
//
// A subcommand lives in its own cli_<name>.cpp: one add_<name>_command function adds a CLI11
// subcommand with its options and returns the action to run when that subcommand was chosen.
// Adding one is that file, its add_<name>_command declaration below and one line in the list
// in run_cli.cpp.
#pragma once
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

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
Command add_eval_command(CLI::App& parent);
Command add_recipes_command(CLI::App& parent);
Command add_sweep_command(CLI::App& parent);

// --- Helpers shared by the subcommands (text.cpp) ---

// eval and sweep --model: a usage Failure unless ctx is 0 (the default) or in [2, seq_len].
void check_ctx_option(int ctx, int seq_len);
// eval and sweep --model: token ids from `tokens_path`, or the text file `text_path` through
// the model's tokenizer (`model_path` locates it); ids are checked against `vocab`.
std::vector<int> read_eval_tokens(const std::string& tokens_path, const std::string& text_path,
                                  const std::string& model_path, int vocab);

// --max-memory (max_memory.cpp): the option, and setting the process-wide budget from it
// (empty: the default); a malformed size is a usage Failure.
void add_max_memory_option(CLI::App* app, std::string& value);
void apply_max_memory(const std::string& value);

// parse_format, with its lowp::Error turned into a usage Failure.
Format format_option(const std::string& name);

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

}  // namespace lowp::cli
