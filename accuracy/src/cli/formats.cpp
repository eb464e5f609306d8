// `lowp formats`: the table of every preset format.
#include <algorithm>
#include <ostream>
#include <vector>

#include "cli/command.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"

namespace lowp::cli {
namespace {

// One code ("0x7c") or a run of codes ("0x7d-0x7f").
std::string code_range(const Format& f, std::uint32_t first, std::uint32_t last) {
  return first == last ? hex_code(f, first) : hex_code(f, first) + "-" + hex_code(f, last);
}

std::string join(const std::vector<std::string>& parts) {
  if (parts.empty()) return "none";
  std::string r;
  for (const auto& p : parts) r += (r.empty() ? "" : ",") + p;
  return r;
}

std::string inf_codes(const Format& f) {
  std::vector<std::string> parts;
  if (const auto pos = f.inf_code(false)) parts.push_back(hex_code(f, *pos));
  if (const auto neg = f.inf_code(true); neg && neg != f.inf_code(false)) parts.push_back(hex_code(f, *neg));
  return join(parts);
}

// Every NaN code, as runs, per the encoding of the top codes (see Specials).
std::string nan_codes(const Format& f) {
  if (f.kind == Kind::integer) return "none";
  const std::uint32_t all = (1u << (f.exp_bits + f.man_bits)) - 1;  // every magnitude bit set
  const std::uint32_t top = ((1u << f.exp_bits) - 1) << f.man_bits;
  std::vector<std::string> parts;
  switch (f.specials) {
    case Specials::ieee:
      if (f.man_bits > 0) {
        parts.push_back(code_range(f, top | 1u, all));
        if (f.is_signed) parts.push_back(code_range(f, f.sign_bit() | top | 1u, f.sign_bit() | all));
      }
      break;
    case Specials::fn:
      parts.push_back(hex_code(f, all));
      if (f.is_signed) parts.push_back(hex_code(f, f.sign_bit() | all));
      break;
    case Specials::fnuz:
    case Specials::p3109: parts.push_back(hex_code(f, *f.nan_code())); break;
    case Specials::finite: break;
  }
  return join(parts);
}

std::vector<std::string> row(const NamedFormat& p) {
  const Format& f = p.format;
  std::vector<std::string> aliases(p.aliases.begin(), p.aliases.end());
  const bool fl = f.kind == Kind::floating;
  return {std::string(p.name),
          aliases.empty() ? "-" : join(aliases),
          std::to_string(f.bits()),
          fl ? std::to_string(f.exp_bits) : "-",
          fl ? std::to_string(f.man_bits) : "-",
          fl ? std::to_string(f.bias) : "-",
          exact_decimal(f.max_finite()),
          exact_decimal(f.min_normal()),
          exact_decimal(f.min_subnormal()),
          inf_codes(f),
          nan_codes(f),
          std::string(p.note)};
}

// Numbers are right-aligned, text left-aligned; the last column is not padded.
void print_rows(std::ostream& out, const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      const std::string pad(width[c] - r[c].size(), ' ');
      if (c > 0) line += "  ";
      line += right[c] ? pad + r[c] : (c + 1 < r.size() ? r[c] + pad : r[c]);
    }
    out << line << '\n';
  }
}

void print_table(std::ostream& out) {
  const std::vector<std::string> header = {"name", "aliases", "bits", "exp", "man", "bias", "max_finite",
                                           "min_normal", "min_subnormal", "inf", "nan", "note"};
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& p : presets()) rows.push_back(row(p));
  print_rows(out, rows, {false, false, true, true, true, true, true, true, true, false, false, false});
}

// The IEEE P3109 family, one line per width, signedness and domain: the precisions it spans,
// and the facts of its first and last member ("a..b").
void print_p3109(std::ostream& out) {
  out << "\nIEEE P3109 (current draft, as graphcore-research/gfloat defines it): p3109_kKpP{s|u}{e|f};\n"
         "s signed, u unsigned; e extended (+-Inf), f finite; binary8pP is p3109_k8pPse\n";
  const std::vector<std::string> header = {"names", "bits", "exp", "man", "bias", "max_finite", "min_subnormal",
                                           "inf", "nan"};
  std::vector<std::vector<std::string>> rows = {header};
  auto span = [](const std::string& a, const std::string& b) { return a == b ? a : a + ".." + b; };
  for (int k = 3; k <= 8; ++k)
    for (bool is_signed : {true, false})
      for (bool ext : {true, false}) {
        const int p_max = is_signed ? k - 1 : k;
        auto name = [&](int p) {
          return "p3109_k" + std::to_string(k) + "p" + std::to_string(p) + (is_signed ? "s" : "u") + (ext ? "e" : "f");
        };
        const Format lo = parse_format(name(1)), hi = parse_format(name(p_max));
        rows.push_back({"p3109_k" + std::to_string(k) + "p{1.." + std::to_string(p_max) + "}" + (is_signed ? "s" : "u") +
                            (ext ? "e" : "f"),
                        std::to_string(k), span(std::to_string(lo.exp_bits), std::to_string(hi.exp_bits)),
                        span(std::to_string(lo.man_bits), std::to_string(hi.man_bits)),
                        span(std::to_string(lo.bias), std::to_string(hi.bias)),
                        span(exact_decimal(lo.max_finite()), exact_decimal(hi.max_finite())),
                        span(exact_decimal(lo.min_subnormal()), exact_decimal(hi.min_subnormal())), inf_codes(lo),
                        nan_codes(lo)});
      }
  print_rows(out, rows, {false, true, true, true, true, true, true, false, false});
}

}  // namespace

Command add_formats_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("formats", "List every preset format");
  app->footer(
      "Columns: canonical name, aliases, bits per code, exponent and mantissa bits and bias\n"
      "(floating formats), largest finite value, smallest normal and smallest subnormal (the\n"
      "smallest positive value; 1 for integers), the Inf and NaN codes in hex (runs as a-b, or\n"
      "none), and a note. Values are exact: the shortest decimal that reads back exactly.\n"
      "The IEEE P3109 family follows, one line per width, signedness and domain (ranges a..b\n"
      "over its precisions P = 1..). `lowp cast --to` and `lowp decode --from` also accept\n"
      "the generic spellings of `lowp cast --help`.");
  return {app, [](Io& io) {
            print_table(io.out);
            print_p3109(io.out);
            return exit_ok;
          }};
}

}  // namespace lowp::cli
