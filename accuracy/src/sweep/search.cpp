// The mixed-precision search's multiple-choice knapsack (search.hpp).
#include "lowp/accuracy/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/quantize.hpp"
#include "report/text.hpp"

namespace lowp::accuracy {
namespace {

// The dynamic programme's table holds one byte per (tensor, cell): at most this many bytes
// (plus one cell per tensor where rounded-up costs reach past the room: solve_search).
constexpr std::uint64_t kTableBytes = std::uint64_t{1} << 26;

}  // namespace

std::uint64_t weight_bits(const quant::QuantSpec& spec, std::size_t rows, std::size_t cols) {
  const long double n = static_cast<long double>(rows) * static_cast<long double>(cols);
  return static_cast<std::uint64_t>(std::llround(static_cast<long double>(quant::bits_per_element(spec, rows, cols)) * n));
}

std::vector<SearchTensor> search_options(const Sensitivity& s) {
  std::vector<SearchTensor> out;
  for (const auto& r : s.rows) {
    if (r.t.kind != "weight") continue;
    if (out.empty() || out.back().t.key() != r.t.key()) out.push_back({r.t, {}});
    if (!r.error.empty() || !std::isfinite(r.kld)) continue;
    out.back().options.push_back({r.spec, weight_bits(quant::parse_quant_spec(r.spec), r.t.rows, r.t.cols), r.kld});
  }
  for (const auto& t : out)
    if (t.options.empty())
      throw Error("search: no menu spec runs on " + t.t.key() + " (" + std::to_string(t.t.rows) + "x" +
                  std::to_string(t.t.cols) + "); add one, or `:pad` to a block spec");
  return out;
}

SearchPlan solve_search(std::span<const SearchTensor> tensors, double budget, double base_kld) {
  if (tensors.empty()) throw Error("search: no weight tensor to choose for");
  SearchPlan plan;
  plan.budget = budget;
  std::uint64_t floor_bits = 0, spread = 0, g = 0;
  for (const auto& t : tensors) {
    if (t.options.size() > 255) throw Error("search: more than 255 menu specs");
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& o : t.options) lo = std::min(lo, o.bits), hi = std::max(hi, o.bits);
    floor_bits += lo;
    spread += hi - lo;
    for (const auto& o : t.options) g = std::gcd(g, o.bits - lo);
    plan.weights += static_cast<std::uint64_t>(t.t.rows) * t.t.cols;
  }
  // bits <= budget x weights + the tolerance (search.hpp: one float32 word per tensor), bits an
  // integer: the budget in whole bits (long double: exact for any weight count below 2^64 / 2^11
  // and budgets of a few decimals).
  const long double cap = std::floor(static_cast<long double>(budget) * static_cast<long double>(plan.weights)) +
                          static_cast<long double>(kBudgetToleranceBitsPerTensor * tensors.size());
  if (!(budget > 0) || cap < static_cast<long double>(floor_bits))
    throw Error("search: budget " + report::exact(budget) + " bits per weight is below the cheapest menu choice, " +
                report::exact(static_cast<double>(floor_bits) / static_cast<double>(plan.weights)) +
                " bits per weight");
  const std::uint64_t room = static_cast<std::uint64_t>(std::min(cap - floor_bits, static_cast<long double>(spread)));
  if (g == 0) g = 1;  // every tensor has one cost: nothing to choose
  const std::uint64_t max_cells = std::max<std::uint64_t>(2, kTableBytes / tensors.size());
  plan.unit = g;
  if (room / g + 1 > max_cells) {
    plan.unit = g * ((room / g + max_cells - 2) / (max_cells - 1));  // a multiple of g: exact costs stay exact
    plan.exact = false;
  }
  // The grid's last point: the room in whole units, but never below the dearest choice's
  // rounded cost when every choice fits (rounding each cost up must not push out a choice
  // that fits; with unit = g nothing rounds and this is room / g).
  std::uint64_t top = 0;
  for (const auto& t : tensors) {
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& o : t.options) lo = std::min(lo, o.bits), hi = std::max(hi, o.bits);
    top += (hi - lo + plan.unit - 1) / plan.unit;
  }
  const long double avail = cap - static_cast<long double>(floor_bits);
  const std::uint64_t last =
      avail >= static_cast<long double>(top) * static_cast<long double>(plan.unit)
          ? top
          : static_cast<std::uint64_t>(avail) / plan.unit;  // avail < top x unit: fits in 64 bits
  const std::size_t cells = static_cast<std::size_t>(last) + 1;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> dp(cells, inf), next(cells);
  std::vector<std::uint8_t> pick(tensors.size() * cells);
  dp[0] = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    std::uint64_t lo = UINT64_MAX;
    for (const auto& o : t.options) lo = std::min(lo, o.bits);
    std::fill(next.begin(), next.end(), inf);
    for (std::size_t j = 0; j < t.options.size(); ++j) {
      const std::uint64_t c = (t.options[j].bits - lo + plan.unit - 1) / plan.unit;  // rounded up
      if (c >= cells) continue;
      for (std::size_t at = c; at < cells; ++at) {
        const double v = dp[at - c] + t.options[j].kld;
        if (v < next[at]) {  // ties: the earlier menu spec
          next[at] = v;
          pick[i * cells + at] = static_cast<std::uint8_t>(j);
        }
      }
    }
    dp.swap(next);
  }
  // The smallest predicted sum; ties: the fewest bits.
  std::size_t best = 0;
  for (std::size_t at = 1; at < cells; ++at)
    if (dp[at] < dp[best]) best = at;
  if (!std::isfinite(dp[best])) throw Error("search: no choice of the menu meets the budget");
  plan.choice.assign(tensors.size(), 0);
  std::size_t at = best;
  for (std::size_t i = tensors.size(); i-- > 0;) {
    const auto& t = tensors[i];
    const std::size_t j = pick[i * cells + at];
    std::uint64_t lo = UINT64_MAX;
    for (const auto& o : t.options) lo = std::min(lo, o.bits);
    plan.choice[i] = j;
    at -= static_cast<std::size_t>((t.options[j].bits - lo + plan.unit - 1) / plan.unit);
  }
  // The sum in tensor order (the DP's own order too), so the figure is reproducible by hand.
  plan.predicted = base_kld;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    plan.bits += tensors[i].options[plan.choice[i]].bits;
    plan.predicted += tensors[i].options[plan.choice[i]].kld;
  }
  return plan;
}

std::optional<SearchPlan> uniform_plan(std::span<const SearchTensor> tensors, const std::string& spec, double base_kld) {
  SearchPlan plan;
  plan.predicted = base_kld;
  for (const auto& t : tensors) {
    const auto it = std::find_if(t.options.begin(), t.options.end(), [&](const auto& o) { return o.spec == spec; });
    if (it == t.options.end()) return std::nullopt;
    plan.choice.push_back(static_cast<std::size_t>(it - t.options.begin()));
    plan.bits += it->bits;
    plan.weights += static_cast<std::uint64_t>(t.t.rows) * t.t.cols;
    plan.predicted += it->kld;
  }
  return plan;
}

Recipe search_recipe(std::span<const SearchTensor> tensors, const SearchPlan& plan, const Recipe& base,
                     const std::string& name) {
  Recipe r = base;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    r = with_tensor(r, tensors[i].t, tensors[i].options[plan.choice[i]].spec, name);
  r.note = "lowp search: " + report::fixed("%.4g", plan.bits_per_weight()) + " bits per weight (budget " +
           report::exact(plan.budget) + "), predicted KLD " + report::fixed("%.4g", plan.predicted);
  return r;
}

}  // namespace lowp::accuracy
