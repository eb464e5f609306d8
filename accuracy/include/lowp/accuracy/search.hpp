// The mixed-precision search, `lowp search`: one spec of a menu per weight tensor, minimising
// the predicted KLD under an average bits-per-weight budget.
//
// The prediction is additive: the KLD of the base recipe (the activations kept quantized, or
// nothing) plus, for each weight tensor, the KLD its spec adds when it alone is quantized
// (sensitivity.hpp, measured on the calibration tokens). Interactions between tensors are not
// modelled; `lowp search --eval` measures the chosen recipe on held-out text to show how far
// the sum is off.
//
// The solver is a multiple-choice knapsack solved exactly by dynamic programming over the bit
// budget: each tensor's cost is its storage bits (element bits, block scale bits, tensor scale)
// minus its cheapest option's, on a grid of `unit` bits. The grid is the greatest common divisor
// of those costs when the table fits in memory: the answer is then the optimum. Otherwise the
// costs are rounded up to a coarser unit: the answer still meets the budget and is optimal
// for the rounded costs, but a choice within (tensors x unit) bits of the budget may be missed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/recipe.hpp"
#include "lowp/accuracy/sensitivity.hpp"

namespace lowp::accuracy {

struct SearchOption {
  std::string spec;
  std::uint64_t bits = 0;  // storage bits of the tensor under the spec, scales included
  double kld = 0;          // the KLD the tensor adds alone (SensitivityRow::kld)
};

struct SearchTensor {
  SensitivityTensor t;
  std::vector<SearchOption> options;  // the menu's specs that ran on this tensor, in menu order
};

// llround(quant::bits_per_element(spec, rows, cols) x rows x cols): the whole tensor's bits.
std::uint64_t weight_bits(const quant::QuantSpec& spec, std::size_t rows, std::size_t cols);

// The weight tensors of a sensitivity run and their options; a (tensor, spec) that failed or
// gave a non-finite KLD is not an option. Throws lowp::Error naming a tensor left with none.
std::vector<SearchTensor> search_options(const Sensitivity& s);

struct SearchPlan {
  double budget = 0;                // bits per weight asked
  std::vector<std::size_t> choice;  // per tensor, the index of its option
  std::uint64_t bits = 0, weights = 0;  // total storage bits and weights of the choice
  double predicted = 0;             // base KLD + the chosen options' KLD
  std::uint64_t unit = 1;           // the grid of the dynamic programme, in bits
  bool exact = true;                // unit is the costs' gcd: the optimum
  double bits_per_weight() const { return weights ? static_cast<double>(bits) / static_cast<double>(weights) : 0; }
};

// A plan meets a budget B when its bits <= B x weights + 32 x tensors: one float32 word per
// weight tensor of tolerance, so the tensor-level scale of NVFP4 (and of per-tensor specs) does
// not push a menu of 4.5-bit specs past --budget 4.5 (nvfp4 costs 4.5 + 32 / (rows x cols)).
inline constexpr std::uint64_t kBudgetToleranceBitsPerTensor = 32;

// Throws lowp::Error when the budget (with the tolerance above) is below the cheapest choice
// (each tensor's cheapest option), naming that figure.
SearchPlan solve_search(std::span<const SearchTensor> tensors, double budget, double base_kld);

// The uniform recipe of a menu spec: `spec` on every tensor, its predicted KLD base_kld plus
// the tensors' (budget 0); nullopt when the spec is not an option of every tensor.
std::optional<SearchPlan> uniform_plan(std::span<const SearchTensor> tensors, const std::string& spec, double base_kld);

// `base` plus one `layer.<N>.weights.<kind>` line per chosen tensor (`weights.classifier` for
// the classifier), named `name`.
Recipe search_recipe(std::span<const SearchTensor> tensors, const SearchPlan& plan, const Recipe& base,
                     const std::string& name);

}  // namespace lowp::accuracy
