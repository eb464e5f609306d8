// `lowp cast`: values on stdin -> codes of a format, each with the value it decodes to.
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/numerics/bits.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/numerics/rounding.hpp"

namespace lowp::cli {
namespace {

// Parses a whole value (decimal, C99 hex-float, nan, inf, -inf) to binary64 rounded to odd:
// the exact value if binary64 holds it, else the neighbour nearer zero with its last bit set.
// Rounding to odd at 53 bits and then to p <= 51 bits equals rounding the exact value directly
// in every nearest, directed and odd mode (Boldo & Melquiond), and every format here has at
// most 24 significant bits and a range inside binary64's normal range, so no decimal input is
// double-rounded. Stochastic rounding reads 32 bits below the kept ones: exact for <= 20
// significant bits; for 21-24 bits (float32) the up-probability may differ by <= 2^-29.
std::optional<double> parse_value_odd(const std::string& s) {
  // glibc's strtod honours the rounding mode: the two directed results bracket the value.
  const int saved = std::fegetround();
  char* end = nullptr;
  std::fesetround(FE_DOWNWARD);
  const double lo = std::strtod(s.c_str(), &end);
  std::fesetround(FE_UPWARD);
  const double hi = std::strtod(s.c_str(), nullptr);
  std::fesetround(saved);
  if (end == s.c_str() || end != s.c_str() + s.size()) return std::nullopt;  // all of it, NULs too
  if (std::isnan(lo) || lo == hi) return lo;
  const double toward_zero = std::signbit(lo) ? hi : lo;  // +-0 and +-DBL_MAX included
  return f64_from_bits(f64_bits(toward_zero) | 1u);
}

struct CastArgs {
  std::string to;
  std::string round = "nearest";
  bool saturate = false;
  bool flush_subnormals = false;
  std::uint64_t seed = 0;
};

int run_cast(Io& io, const CastArgs& a) {
  const Format f = format_option(a.to);
  CastOptions opt;
  if (const auto r = parse_round(a.round)) {
    opt.round = *r;
  } else {
    throw Failure{exit_usage, "unknown rounding mode " + quote_input(a.round) +
                                  "; valid modes: nearest, away, zero, up, down, odd, stochastic"};
  }
  opt.saturate = a.saturate;
  opt.flush_subnormals = a.flush_subnormals;
  const RngKey key = rng_key(a.seed);
  for_each_line(io, [&](std::string_view text, std::size_t k) {
    const auto x = parse_value_odd(std::string(text));
    if (!x) throw Failure{exit_bad_data, "cannot parse " + quote_input(text) + " as a number"};
    const std::uint32_t rand = opt.round == Round::stochastic ? random_bits(key, k) : 0u;
    return code_and_value(f, encode(f, *x, opt, rand));
  });
  return exit_ok;
}

}  // namespace

Command add_cast_command(CLI::App& parent) {
  auto args = std::make_shared<CastArgs>();
  CLI::App* app = parent.add_subcommand("cast", "Round values read from stdin to a format");
  app->add_option("--to", args->to, "Target format (the grammar is below)")
      ->required();
  app->add_option("--round", args->round, "nearest (ties to even), away (ties away), zero, up, down, odd, stochastic")
      ->capture_default_str();
  app->add_flag("--saturate", args->saturate,
                "Clamp finite overflow and +-inf inputs to +-max instead of Inf/NaN");
  app->add_flag("--flush-subnormals", args->flush_subnormals, "Results that would be subnormal become zero");
  add_number_option<std::uint64_t>(app, "--seed", args->seed, 0, UINT64_MAX,
                                   "Seed for --round stochastic, default 0: line k (0-based) uses random bits (seed, k)");
  app->footer(
      "Input: one value per line: decimal (rounded directly to the format, never twice), C99\n"
      "hex-float (0x1.8p+3), nan, inf or -inf; surrounding whitespace is ignored; an empty\n"
      "line is an error.\n"
      "Output: one line per value: the code in hex, a space, and the value the code decodes to\n"
      "(the shortest decimal that reads back exactly; nan, inf, -inf, -0).\n"
      "Example: echo 1000 | lowp cast --to float8_e5m2   prints   0x64 1024\n"
      "A bad line stops lowp with exit status 1 and one line on stderr naming it; the lines\n"
      "before it have already been printed, none after it is. Exit status 2: a usage error\n"
      "(unknown format or rounding mode, bad option).\n" +
      format_help());
  return {app, [args](Io& io) { return run_cast(io, *args); }};
}

}  // namespace lowp::cli
