// `lowp decode`: hex codes on stdin -> the values they stand for.
#include <charconv>
#include <memory>

#include "cli/command.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"

namespace lowp::cli {
namespace {

std::uint32_t parse_code(const Format& f, std::string_view text) {
  std::string_view digits = text;
  if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2);
  const auto is_hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  };
  bool ok = !digits.empty();
  for (char c : digits) ok = ok && is_hex(c);
  if (!ok) throw Failure{exit_bad_data, "cannot parse " + quote_input(text) + " as a hex code"};
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 16);
  if (ec == std::errc::result_out_of_range || v > f.code_mask())
    throw Failure{exit_bad_data, "code " + quote_input(text) + " is out of range for " + format_name(f) +
                                     " (0x0.." + hex_code(f, f.code_mask()) + ")"};
  const auto code = static_cast<std::uint32_t>(v);
  if (!is_valid_code(f, code))
    throw Failure{exit_bad_data, "code " + quote_input(text) + " is not a valid " + format_name(f) + " code"};
  return code;
}

}  // namespace

Command add_decode_command(CLI::App& parent) {
  auto from = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand("decode", "Decode hex codes read from stdin");
  app->add_option("--from", *from, "Format of the codes (the grammar is below)")
      ->required();
  app->footer(
      "Input: one code per line in hex, 0x prefix optional; surrounding whitespace is ignored;\n"
      "an empty line is an error.\n"
      "Output: the same two columns as `lowp cast`: the code, a space, its exact value.\n"
      "An unparsable or out-of-range code stops lowp with exit status 1 and one line on stderr\n"
      "naming it; the lines before it have already been printed, none after it is.\n" +
      format_help());
  return {app, [from](Io& io) {
            const Format f = format_option(*from);
            for_each_line(io, [&](std::string_view text, std::size_t) { return code_and_value(f, parse_code(f, text)); });
            return exit_ok;
          }};
}

}  // namespace lowp::cli
