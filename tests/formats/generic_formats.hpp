// A spread of generic minifloats for the tests: every exponent/mantissa split up to a width,
// for each Specials kind, signed and unsigned, with and without subnormals, plus odd biases.
#pragma once
#include <string>
#include <vector>

#include "lowp/formats/format.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::test {

// One family: a Specials kind with a signedness and a subnormal choice.
struct Family {
  Specials specials;
  bool is_signed;
  bool subnormals;
  std::string name() const {
    static const char* const kNames[] = {"ieee", "fn", "fnuz", "p3109", "finite"};
    return std::string(kNames[static_cast<int>(specials)]) + (is_signed ? "_signed" : "_unsigned") +
           (subnormals ? "" : "_nozero");
  }
};

inline std::vector<Family> families() {
  std::vector<Family> v;
  for (Specials sp : {Specials::ieee, Specials::fn, Specials::fnuz, Specials::p3109, Specials::finite})
    for (bool sg : {true, false})
      for (bool sub : {true, false}) {
        try {
          minifloat(4, 3, sp, sg, std::nullopt, sub);
        } catch (const Error&) {
          continue;  // a combination the descriptor rejects
        }
        v.push_back({sp, sg, sub});
      }
  return v;
}

// Every valid (e, m) of the family with a width in [min_bits, max_bits], then the
// default-width splits again with biases 0, -3 and default + 5.
inline std::vector<Format> family_formats(const Family& fam, int min_bits, int max_bits) {
  std::vector<Format> v;
  for (int e = 1; e <= 8; ++e)
    for (int m = 0; m <= 23; ++m) {
      const int w = e + m + (fam.is_signed ? 1 : 0);
      if (w < min_bits || w > max_bits) continue;
      for (int bias_kind = 0; bias_kind < 4; ++bias_kind) {
        if (bias_kind > 0 && (m > 3 || e > 5)) continue;  // odd biases on a few small splits
        const int def = (1 << (e - 1)) - 1;
        const int bias = bias_kind == 0 ? def : bias_kind == 1 ? 0 : bias_kind == 2 ? -3 : def + 5;
        if (bias_kind > 0 && bias == def) continue;
        try {
          v.push_back(minifloat(e, m, fam.specials, fam.is_signed, bias, fam.subnormals));
        } catch (const Error&) {
        }
      }
    }
  return v;
}

}  // namespace lowp::test
