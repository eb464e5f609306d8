// Every linear preset against fp32 on realistic random data (relative Frobenius error of Y,
// dX, dW, db within a stated tolerance), and unbiased stochastic-rounding gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "lowp/quant/linear.hpp"
#include "test_linear_support.hpp"

namespace lowp::quant {
namespace {

using test::LinearProblem;
using test::make_problem;
using test::rel_frob;
using test::run_linear;

// The bound on the relative Frobenius error vs fp32 (Y, dX, dW) comes from the error analysis
// of test_linear_support.hpp (error_bound: each operand's rounding error from its format, group
// and scale rule, combined over the GEMM); 0 where the GEMM is the fp32 one. db is exact (dY is
// never quantized for it). The bound is computed from the recipe under test and sits 1.7-3.1x
// above the error, so it cannot tell one element format from another (E5M2 from E4M3, E2M3
// from E4M3): test_linear_preset_specs.cpp checks the operand specs themselves.
TEST(LinearPresets, EveryPresetWithinItsToleranceOfFp32) {
  const LinearProblem p = make_problem(256, 128, 256, 77);
  const auto ref = run_linear(linear_preset("fp32"), p);
  for (const LinearRecipe& r : linear_presets()) {
    // Two steps: the delayed-scaling preset has an amax history only from the second on.
    // fp8-block128's emulated accumulator (tens of ns a product; tested on its own in
    // test_linear_training.cpp) is replaced by float32 here to keep the test fast.
    LinearRecipe fast = r;
    for (GemmRecipe* g : {&fast.fwd, &fast.dgrad, &fast.wgrad}) g->accumulation.reset();
    const auto got = run_linear(fast, p, 1, 2, 2);
    const double ey = rel_frob(got.Y, ref.Y), edx = rel_frob(got.dX, ref.dX), edw = rel_frob(got.dW, ref.dW);
    const test::ErrorBound b = test::error_bound(r, p);
    // "ey edx edw bound_y bound_dx bound_dw": docs/quantization.md's table is generated from
    // this run's --gtest_output=json (scripts/results, PRESET_ERRORS).
    char line[160];
    std::snprintf(line, sizeof line, "%.6g %.6g %.6g %.6g %.6g %.6g", ey, edx, edw, b.y, b.dx, b.dw);
    RecordProperty(r.name, line);
    std::printf("%-28s Y %.5f (bound %.4f)  dX %.5f (%.4f)  dW %.5f (%.4f)\n", r.name.c_str(), ey, b.y, edx, b.dx,
                edw, b.dw);
    EXPECT_LE(ey, b.y) << r.name;
    EXPECT_LE(edx, b.dx) << r.name;
    EXPECT_LE(edw, b.dw) << r.name;
    EXPECT_EQ(got.db, ref.db) << r.name;
  }
}

TEST(LinearPresets, ListedByNameWithNotes) {
  for (const LinearRecipe& r : linear_presets()) {
    EXPECT_EQ(&linear_preset(r.name), &r);
    EXPECT_FALSE(r.note.empty()) << r.name;
    EXPECT_NE(describe(r).find("wgrad"), std::string::npos);
  }
  EXPECT_EQ(describe(linear_preset("fp8-tensorwise")),
            "fwd X=float8_e4m3fn:tensor:amax:nearest:sat W=float8_e4m3fn:tensor:amax:nearest:sat; "
            "dgrad dY=float8_e5m2:tensor:amax:nearest:sat W^T=float8_e4m3fn:tensor:amax:nearest:sat; "
            "wgrad dY^T=float8_e5m2:tensor:amax:nearest:sat X^T=float8_e4m3fn:tensor:amax:nearest:sat");
}

// Stochastic rounding gives unbiased gradients: the mean of dX and dW over S seeds converges
// to the gradients of the same layer with float32 backward GEMMs (its forward, and so a clip
// mask gating the gradient, kept), the error shrinking like 1/sqrt(S): x2 per x4 seeds. The
// squared error sums 4096 elements, so it concentrates within a few percent and the ratio is
// 2 +- 0.1; a bias b would make it sqrt((b^2 + v/S) / (b^2 + v/4S)) < 2. Asserted > 1.6x.
void expect_unbiased(const LinearRecipe& r) {
  constexpr double ratio = 1.6;
  const LinearProblem p = make_problem(64, 64, 64, 12);
  LinearRecipe exact_backward = r;
  exact_backward.dgrad = exact_backward.wgrad = GemmRecipe{};
  const auto ref = run_linear(exact_backward, p);
  QuantLinear layer(r, p.K, p.N, false);
  layer.weight() = p.W;
  std::vector<float> Y(p.M * p.N), dX(p.M * p.K);
  std::vector<double> sum_dx(dX.size(), 0.0), sum_dw(p.W.size(), 0.0);
  layer.forward(p.X.data(), p.M, Y.data(), 1);
  std::vector<double> errs_dx, errs_dw;
  std::size_t seeds = 0;
  for (std::size_t target : {16u, 64u, 256u}) {
    for (; seeds < target; ++seeds) {
      std::fill(layer.weight_grad().begin(), layer.weight_grad().end(), 0.0f);
      layer.backward(p.G.data(), dX.data(), 1000 + seeds);
      for (std::size_t i = 0; i < dX.size(); ++i) sum_dx[i] += dX[i];
      for (std::size_t i = 0; i < sum_dw.size(); ++i) sum_dw[i] += layer.weight_grad()[i];
    }
    std::vector<float> mdx(dX.size()), mdw(sum_dw.size());
    for (std::size_t i = 0; i < mdx.size(); ++i) mdx[i] = static_cast<float>(sum_dx[i] / seeds);
    for (std::size_t i = 0; i < mdw.size(); ++i) mdw[i] = static_cast<float>(sum_dw[i] / seeds);
    errs_dx.push_back(rel_frob(mdx, ref.dX));
    errs_dw.push_back(rel_frob(mdw, ref.dW));
  }
  std::printf("%s mean over 16/64/256 seeds: dX %.4f %.4f %.4f  dW %.4f %.4f %.4f\n", r.name.c_str(),
              errs_dx[0], errs_dx[1], errs_dx[2], errs_dw[0], errs_dw[1], errs_dw[2]);
  test::record_seed_means(r.name, errs_dx, errs_dw);
  for (std::size_t i = 1; i < errs_dx.size(); ++i) {
    EXPECT_GT(errs_dx[i - 1] / errs_dx[i], ratio) << r.name;
    EXPECT_GT(errs_dw[i - 1] / errs_dw[i], ratio) << r.name;
  }
}

// Quartet's backward operands are the forward's quantized W' and X'; its float32 reference
// (backward_from_forward_operands, no backward specs) multiplies dY by those same W' and X', so
// the mean converges to it.
TEST(LinearPresets, QuartetBackwardIsUnbiased) { expect_unbiased(linear_preset("quartet-fp4")); }
TEST(LinearPresets, QuartetFullrotBackwardIsUnbiased) { expect_unbiased(linear_preset("quartet-fp4-fullrot")); }
// nvfp4-train's unbiasedness (and what its mean converges to): test_linear_recipes.cpp.
TEST(LinearPresets, Quartet2MsEdenBackwardIsUnbiased) { expect_unbiased(linear_preset("quartet2-nvfp4")); }

TEST(LinearPresets, StochasticRowwiseFp8IsUnbiased) {
  LinearRecipe r;
  r.name = "e5m2-row-stochastic";
  for (GemmRecipe* g : {&r.dgrad, &r.wgrad}) g->a = g->b = parse_quant_spec("e5m2:row:amax:stochastic");
  expect_unbiased(r);
}

}  // namespace
}  // namespace lowp::quant
