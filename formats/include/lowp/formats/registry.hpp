// Named formats: the presets (ml_dtypes / PyTorch names and short aliases) and eXmY parsing.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lowp/formats/format.hpp"

namespace lowp {

struct NamedFormat {
  std::string_view name;                 // canonical name, e.g. "float8_e4m3fn"
  std::vector<std::string_view> aliases; // e.g. {"e4m3"}
  Format format;
  std::string_view note;                 // one line: where it comes from / what it is for
};

std::span<const NamedFormat> presets();

// Looks a format up (case-insensitively) by canonical name, alias, or a generic spelling:
//   [u]eXmY[fn|fnuz|fin|fnu|p3109][_nz][_bBIAS] with X in 1..8, Y in 0..23: no suffix is
//   IEEE-like Inf/NaN when X >= 2 and all-finite when X = 1; u = unsigned; fnu = unsigned fn
//   without zero (E8M0 style); _nz = no subnormals and no zero; _bBIAS overrides 2^(X-1)-1.
//   intN, intN_sym, uintN with N in 2..16.
// Throws lowp::Error naming the text and listing the valid names when nothing matches.
Format parse_format(std::string_view name);

// The generic spellings parse_format() accepts, in one line: the text its error message, the
// `lowp cast` / `lowp decode` help and the README all show.
std::string_view format_grammar();

// Canonical name of a format: its preset name, else the generic spelling.
std::string format_name(const Format& f);

}  // namespace lowp
