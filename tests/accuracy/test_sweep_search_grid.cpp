// `lowp search`'s coarse grid (search.hpp): when the exact dynamic programme's table would not
// fit, the costs are rounded up to a coarser unit, and the answer must still meet the budget, be
// optimal for the rounded costs, and miss only choices within (tensors x unit) bits of the
// budget. Each claim is checked here against every assignment of a small menu, enumerated.
// The tensors are large (16M weights each), so the bit costs span ~1e9 bits and the grid is
// coarse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lowp/accuracy/search.hpp"

namespace {

using namespace lowp::accuracy;

constexpr std::size_t kTensors = 14;  // 2 options each: 2^14 assignments

struct Best {
  double exact = INFINITY;      // the smallest sum of KLDs whose bits meet the budget
  double rounded = INFINITY;    // ... whose costs rounded up to `unit` meet it
  double margin = INFINITY;     // ... whose bits meet the budget less tensors x unit
  std::uint64_t rounded_cells = 0;  // the rounded cost (in units) of the `rounded` choice
};

// Every assignment of options (bit i of `code`: tensor i's option) under `budget` bits per weight.
Best exhaustive(const std::vector<SearchTensor>& ts, double budget, std::uint64_t unit) {
  std::uint64_t weights = 0, floor_bits = 0;
  for (const auto& t : ts) {
    weights += static_cast<std::uint64_t>(t.t.rows) * t.t.cols;
    floor_bits += std::min(t.options[0].bits, t.options[1].bits);
  }
  // bits <= budget x weights + 32 x tensors, in whole bits (search.hpp's budget and tolerance)
  const auto cap = static_cast<std::uint64_t>(std::floor(static_cast<long double>(budget) * weights)) + 32 * ts.size();
  const std::uint64_t room_cells = (cap - floor_bits) / unit;
  Best b;
  for (std::uint32_t code = 0; code < (1u << ts.size()); ++code) {
    std::uint64_t bits = 0, cells = 0;
    double kld = 0;
    for (std::size_t i = 0; i < ts.size(); ++i) {
      const auto& o = ts[i].options[(code >> i) & 1u];
      const std::uint64_t lo = std::min(ts[i].options[0].bits, ts[i].options[1].bits);
      bits += o.bits;
      cells += (o.bits - lo + unit - 1) / unit;
      kld += o.kld;
    }
    if (bits <= cap) b.exact = std::min(b.exact, kld);
    if (cells <= room_cells && kld < b.rounded) b.rounded = kld, b.rounded_cells = cells;
    if (bits + ts.size() * unit <= cap) b.margin = std::min(b.margin, kld);
  }
  return b;
}

// The claims for one budget; returns the plan.
SearchPlan check(const std::vector<SearchTensor>& ts, double budget) {
  SCOPED_TRACE("budget " + std::to_string(budget));
  const SearchPlan p = solve_search(ts, budget, 0);
  EXPECT_FALSE(p.exact) << "the table fits: the coarse grid is not exercised";
  EXPECT_GT(p.unit, 1u);
  const Best b = exhaustive(ts, budget, p.unit);
  EXPECT_LE(static_cast<long double>(p.bits), std::floor(static_cast<long double>(budget) * p.weights) + 32 * ts.size());
  // The DP sums the KLDs in tensor order, as exhaustive() does: the same doubles.
  EXPECT_EQ(p.predicted, b.rounded) << "not the optimum of the rounded costs";
  EXPECT_GE(p.predicted, b.exact);
  EXPECT_LE(p.predicted, b.margin) << "missed a choice more than tensors x unit bits under the budget";
  return p;
}

SearchTensor tensor(int layer, std::uint64_t cheap_bits, double cheap_kld, std::uint64_t dear_bits, double dear_kld) {
  SearchTensor t;
  t.t.layer = layer;
  t.t.kind = "weight";
  t.t.tensor = "weights.wq";
  t.t.rows = 4096;
  t.t.cols = 4096;
  t.options = {{"int4", cheap_bits, cheap_kld}, {"int8", dear_bits, dear_kld}};
  return t;
}

TEST(SearchGrid, CoarseGridAgainstEveryAssignment) {
  // Unrelated costs around 4 and 8 bits per weight and unrelated KLDs: budgets across the range.
  std::uint32_t x = 2024;
  const auto next = [&] { return x = x * 1103515245u + 12345u, (x >> 8) % 100000; };
  std::vector<SearchTensor> ts;
  const std::uint64_t w = 4096ull * 4096;
  for (std::size_t i = 0; i < kTensors; ++i) {
    const double cheap = 1e-3 * static_cast<double>(1 + next() % 1000), gain = cheap * (0.2 + 0.8e-5 * static_cast<double>(next()));
    ts.push_back(tensor(static_cast<int>(i), 4 * w + next() * 37, cheap, 7 * w + next() * 31 + 2 * next(), cheap - gain));
  }
  for (const double budget : {4.2, 5.5, 6.6, 7.3})
    check(ts, budget);
}

// A budget above every choice: all the dear options fit, and rounding their costs up must not
// lose any of them. Then a case whose rounded optimum sits on the grid's last point: tensors
// 0..12 cost whole units (the unit read from the first solve; their costs move by less than a
// unit each, so the unit stays), tensor 13 tips the spread over by half a unit and its dear
// option gains nearly nothing; with the whole spread as budget the optimum is every other
// tensor dear, exactly floor(spread / unit) units: the grid's last point.
TEST(SearchGrid, CoarseGridKeepsItsLastPoint) {
  const std::uint64_t w = 4096ull * 4096;
  std::vector<SearchTensor> ts;
  for (std::size_t i = 0; i + 1 < kTensors; ++i)
    ts.push_back(tensor(static_cast<int>(i), 4 * w + i, 1.0, 8 * w + 1000 * i, 0.5 - 0.01 * static_cast<double>(i)));
  ts.push_back(tensor(static_cast<int>(kTensors - 1), 4 * w, 1.0, 4 * w + 1, 0.999));
  const std::uint64_t unit = check(ts, 9.0).unit;  // every choice fits
  std::uint64_t last = 0, spread = 0;
  for (std::size_t i = 0; i + 1 < kTensors; ++i) {
    const std::uint64_t cells = (ts[i].options[1].bits - ts[i].options[0].bits) / unit;
    ts[i].options[1].bits = ts[i].options[0].bits + cells * unit;
    last += cells;
    spread += cells * unit;
  }
  ts.back().options[1].bits = ts.back().options[0].bits + unit / 2;
  spread += unit / 2;
  std::uint64_t floor_bits = 0, weights = 0;
  for (const auto& t : ts) floor_bits += t.options[0].bits, weights += t.t.rows * t.t.cols;
  // floor_bits + spread less search.hpp's tolerance (32 bits per tensor), give or take a bit of
  // the division: still last whole units of room.
  const double budget = static_cast<double>(floor_bits + spread - 32 * kTensors) / static_cast<double>(weights);
  const SearchPlan p = check(ts, budget);
  ASSERT_EQ(p.unit, unit) << "the unit moved with the costs: the case does not reach the last point";
  EXPECT_EQ(exhaustive(ts, budget, unit).rounded_cells, last);
  for (std::size_t i = 0; i + 1 < kTensors; ++i) EXPECT_EQ(p.choice[i], 1u) << i;
  EXPECT_EQ(p.choice.back(), 0u);
}

}  // namespace
