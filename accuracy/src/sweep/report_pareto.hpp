// The Pareto chart of `lowp search` (private to lowp_accuracy): bits per weight against KLD.
#pragma once
#include <cmath>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace lowp::accuracy {

// One recipe of a search: a searched one (a budget), a uniform one of the menu, or a llama.cpp
// quantized file (--base-logits, measured only).
struct ParetoPoint {
  std::string name;
  double bpw = 0, predicted = NAN, measured = NAN, measured_se = NAN, dlnppl = NAN;
  bool searched = false;
  bool llama_cpp = false;
  std::string file{};  // the recipe file written (searched), the GGUF (llama.cpp), else empty (search's --csv)
};

// KLD (log axis) against bits per weight: the searched recipes (predicted hollow, measured filled
// with +-1 SE bars and joined: the front found), the uniform ones and llama.cpp's types, each
// uniform and llama.cpp point labelled where its name overlaps nothing (else numbered).
void write_pareto_svg(std::ostream& out, const std::vector<ParetoPoint>& pts, std::string_view model);

}  // namespace lowp::accuracy
