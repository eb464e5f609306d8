// Text helpers shared by the `lowp` subcommands: line loop, error quoting, output columns.
#include <charconv>
#include <cmath>
#include <istream>
#include <ostream>

#include <fstream>
#include <iterator>

#include "cli/command.hpp"
#include "lowp/accuracy/eval_text.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::cli {
namespace {

std::string_view trim(std::string_view s) {
  constexpr std::string_view space = " \t\r\n\v\f";
  const auto first = s.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

}  // namespace

Format format_option(const std::string& name) {
  try {
    return parse_format(name);
  } catch (const Error& e) {
    throw Failure{exit_usage, e.what()};
  }
}

std::string format_help() {
  return "Formats: a name or alias from `lowp formats`, or\n  " + std::string(format_grammar()) +
         "\n"
         "  eXmY: X exponent and Y mantissa bits, IEEE-like Inf/NaN for X >= 2, all finite for X = 1;\n"
         "  fn: only all-ones magnitudes are NaN, no Inf; fnuz: the sign-only code is the one NaN, +0\n"
         "  only; fin: all finite; p3109: IEEE P3109 extended (signed: sign-only NaN, all-ones +-Inf;\n"
         "  unsigned: all-ones NaN, +Inf below); fnu: unsigned fn without zero (E8M0);\n"
         "  _nz (after fn or fin): no subnormals and no zero; _rne (no mantissa bits, no zero): ties to\n"
         "  the even code, not ml_dtypes' ties up; _bBIAS: bias BIAS instead of 2^(X-1)-1; u: unsigned.\n"
         "  p3109_kKpP{s|u}{e|f}: the P3109 draft's K-bit formats of precision P, signed or unsigned,\n"
         "  extended (+-Inf) or finite. intN: two's complement; intN_sym: without -2^(N-1).\n";
}

void for_each_line(Io& io, const std::function<std::string(std::string_view, std::size_t)>& convert) {
  std::string line;
  for (std::size_t k = 0; std::getline(io.in, line); ++k) {
    const std::string_view text = trim(line);
    std::string result;
    try {
      if (text.empty()) throw Failure{exit_bad_data, "empty line (every line must hold one value)"};
      result = convert(text, k);
    } catch (const Failure& f) {
      io.out.flush();
      throw Failure{f.exit_code, "line " + std::to_string(k + 1) + ": " + f.message};
    } catch (const Error& e) {
      io.out.flush();
      throw Failure{exit_bad_data, "line " + std::to_string(k + 1) + ": " + e.what()};
    }
    io.out << result << '\n';
    // Flush before a read that may block (interactive use); piped input stays buffered.
    if (io.in.rdbuf()->in_avail() <= 0) io.out.flush();
  }
  io.out.flush();
}

std::string quote_input(std::string_view text) {
  constexpr std::size_t max_shown = 80;
  std::string r = "'";
  for (std::size_t i = 0; i < text.size() && i < max_shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      constexpr char digits[] = "0123456789abcdef";
      r += "\\x";
      r += digits[c >> 4];
      r += digits[c & 15];
    } else {
      r += static_cast<char>(c);
    }
  }
  r += text.size() > max_shown ? "...'" : "'";
  return r;
}

std::string hex_code(const Format& f, std::uint32_t code) {
  const int digits = (f.bits() + 3) / 4;
  char buf[16];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, code, 16);
  const auto n = static_cast<int>(end - buf);
  std::string r = "0x";
  r.append(static_cast<std::size_t>(digits > n ? digits - n : 0), '0');
  r.append(buf, end);
  return r;
}

std::string exact_decimal(double v) {
  if (std::isnan(v)) return "nan";  // the sign of a NaN carries no value
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip
  return std::string(buf, end);
}

std::string code_and_value(const Format& f, std::uint32_t code) {
  return hex_code(f, code) + " " + exact_decimal(decode(f, code));
}

void check_ctx_option(const std::optional<int>& ctx, int seq_len, std::ostream& err) {
  if (!ctx) return;
  check_range("--ctx", *ctx, 2, max_ctx);
  // llama.cpp's converters write short lengths (128 for stories260K): past it is allowed.
  if (*ctx > seq_len)
    err << "lowp: warning: --ctx " << *ctx << " is beyond the model's context length " << seq_len
        << " (from its metadata); positions past it are extrapolated\n";
}

bool bos_option(const std::string& value, bool when_auto) {
  if (value == "on") return true;
  if (value == "off") return false;
  if (value == "auto") return when_auto;
  throw Failure{exit_usage, "--bos " + quote_input(value) + " is not on, off or auto"};
}

EvalTokens read_eval_tokens(const std::string& tokens_path, const std::string& text_path, const std::string& model_path,
                            int vocab, const std::string& bos) {
  bos_option(bos, false);  // a bad value is a usage error even with --tokens
  if (!tokens_path.empty()) {
    if (bos != "auto") throw Failure{exit_usage, "--bos applies to --text; --tokens ids are used as given"};
    return {accuracy::read_token_file(tokens_path, vocab), -1};
  }
  std::ifstream f(text_path, std::ios::binary);
  if (!f) throw Failure{exit_bad_data, "cannot open " + quote_input(text_path)};
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw Failure{exit_bad_data, "cannot read " + quote_input(text_path)};
  if (text.empty()) throw Failure{exit_bad_data, quote_input(text_path) + " is empty"};
  accuracy::EvalText t;
  try {
    t = accuracy::eval_text_tokens(text, model_path, vocab, bos);
  } catch (const accuracy::NoTokenizer& e) {
    throw Failure{exit_bad_data, std::string(e.what()) + ": give token ids with --tokens"};
  } catch (const Error& e) {
    throw Failure{exit_bad_data, e.what()};
  }
  return {std::move(t.ids), t.window_bos};
}

}  // namespace lowp::cli
