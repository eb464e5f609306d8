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

// Looks a format up by canonical name, alias, or a generic spelling:
//   eXmY (IEEE-like Inf/NaN when X >= 2, all-finite when X = 1), eXmYfn, eXmYfnuz,
//   ueXmY / ueXmYfn (unsigned), with X in 1..8 and Y in 0..23.
// Throws lowp::Error naming the text and listing the valid names when nothing matches.
Format parse_format(std::string_view name);

// Canonical name of a format: its preset name, else the generic spelling.
std::string format_name(const Format& f);

}  // namespace lowp
