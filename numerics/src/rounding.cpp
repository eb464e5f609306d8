#include "lowp/numerics/rounding.hpp"

#include <array>
#include <utility>

namespace lowp {
namespace {
constexpr std::array<std::pair<std::string_view, Round>, 7> kNames{{
    {"nearest", Round::nearest_even},
    {"away", Round::nearest_away},
    {"zero", Round::toward_zero},
    {"up", Round::toward_pos},
    {"down", Round::toward_neg},
    {"stochastic", Round::stochastic},
    {"odd", Round::odd},
}};
}  // namespace

std::optional<Round> parse_round(std::string_view name) noexcept {
  for (auto& [n, r] : kNames)
    if (n == name) return r;
  return std::nullopt;
}

std::string_view round_name(Round r) noexcept {
  for (auto& [n, v] : kNames)
    if (v == r) return n;
  return "?";
}

}  // namespace lowp
