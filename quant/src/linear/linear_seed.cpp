// uses_seed (linear.hpp): every place QuantLinear's passes draw random bits from their seed.
#include "lowp/quant/linear.hpp"

namespace lowp::quant {
namespace {

bool uses_seed(const GemmRecipe& g) {
  for (const auto& s : {g.a, g.b})
    if (s && s->cast.round == Round::stochastic) return true;
  for (SpecialQuant q : {g.a_special, g.b_special})
    if (q == SpecialQuant::ms_eden || q == SpecialQuant::quartet_sr) return true;
  return g.rotation == hadamard::RotationKind::randomized || g.signs == BlockSigns::per_index ||
         g.signs == BlockSigns::per_step || (g.accumulation && g.accumulation->round == Round::stochastic);
}

}  // namespace

bool uses_seed(const LinearRecipe& r) { return uses_seed(r.fwd) || uses_seed(r.dgrad) || uses_seed(r.wgrad); }

}  // namespace lowp::quant
