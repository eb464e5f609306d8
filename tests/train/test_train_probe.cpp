// `lowp probe`'s oracles (train/probe): each figure against something the probe does not compute
// itself: exact zeros of deterministic recipes, unbiasedness of stochastic rounding against a
// planted bias, the E4M3 format's error analysis, and a direct float64 computation.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/cli_run.hpp"
#include "lowp/quant/linear.hpp"
#include "lowp/quant/quantize.hpp"
#include "recipe/train_recipe.hpp"
#include "train/llama_train.hpp"
#include "train/probe/probe.hpp"
#include "train/trainer.hpp"
#include "train_files.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::accuracy::train;
namespace pr = lowp::accuracy::train::probe;

LlamaConfig probe_config() {
  LlamaConfig c;
  c.vocab_size = 258, c.dim = 32, c.hidden_dim = 64, c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 1, c.seq_len = 16;
  return c;
}

// `count` batches of `batch` windows of `ctx` bytes of the test corpus, at spread offsets.
std::vector<pr::Batch> corpus_batches(int count, std::size_t batch, std::size_t ctx) {
  const std::string text = lowp::test::slurp(lowp::test::train_corpus());
  std::vector<pr::Batch> out(static_cast<std::size_t>(count));
  std::size_t off = 0;
  for (auto& b : out)
    for (std::size_t w = 0; w < batch; ++w, off += 997) {
      const std::size_t at = off % (text.size() - ctx - 1);
      for (std::size_t t = 0; t < ctx; ++t) {
        b.tokens.push_back(static_cast<unsigned char>(text[at + t]));
        b.targets.push_back(static_cast<unsigned char>(text[at + t + 1]));
      }
    }
  return out;
}

// Forward in float32, dY and W^T of the dgrad and dY^T of the wgrad in E4M3 with per-tensor
// scales rounded stochastically (`round` = stochastic) or toward zero (a planted bias); W and X
// stay float32 in the backward.
lowp::train::TrainRecipe backward_recipe(const std::string& name, const std::string& round) {
  return lowp::train::parse_train_recipe("name = " + name + "\nlinear = fp32\ndgrad.dy = e4m3:tensor:amax:" + round +
                                         ":sat\nwgrad.dy = e4m3:tensor:amax:" + round + ":sat\n");
}

const pr::Row& find_row(const std::vector<pr::Row>& rows, int layer, const std::string& tensor, const std::string& gemm) {
  for (const pr::Row& r : rows)
    if (r.layer == layer && r.tensor == tensor && r.gemm == gemm) return r;
  throw std::runtime_error("no row " + std::to_string(layer) + " " + tensor + " " + gemm);
}

pr::PointOptions point(int draws) {
  pr::PointOptions o;
  o.step = 0, o.draws = draws, o.threads = 0, o.seed = 7, o.batch = 2, o.ctx = 16;
  return o;
}

// A round-to-nearest recipe gives the same bits in every draw, so every variance is exactly 0
// (not merely small). Mutant checked: the variance taken as (sum |e_d|^2 - D |ebar|^2) / (D - 1)
// without draw 1's shift leaves rounding residue of order 1e-17 and fails.
// Every draw is run here (no reuse of draw 0), so the zeros come from the draws' own bits.
TEST(Probe, RoundToNearestHasExactlyZeroVariance) {
  const LlamaModel theta = init_model(probe_config(), 3);
  pr::PointOptions o = point(3);
  o.reuse_seed_free = false;
  const auto rows = pr::probe_point(theta, lowp::train::find_train_recipe("fp8-tensorwise"), corpus_batches(3, 2, 16), o);
  int gemm_rows = 0;
  for (const pr::Row& r : rows) {
    EXPECT_EQ(r.variance, 0.0) << r.layer << " " << r.tensor << " " << r.gemm;
    gemm_rows += r.gemm != "grad";
  }
  EXPECT_GT(gemm_rows, 3 * 14);  // every block linear's three GEMMs (and the bf16 classifier's)
  EXPECT_GT(find_row(rows, -1, "model", "grad").rel_mse.mean, 0.0);
}

// A seed-free recipe's later draws are counted from draw 0 (probe.hpp): the rows are those of
// running every draw, bit for bit. Mutant checked: a repeated draw that leaves out its loss term
// (loss_delta += term dropped) changes loss_delta and fails.
TEST(Probe, SeedFreeRecipesGiveTheSameRowsWithoutRerunningTheirDraws) {
  const LlamaModel theta = init_model(probe_config(), 5);
  const auto batches = corpus_batches(3, 2, 16);
  const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  for (const char* name : {"fp8-tensorwise", "mxfp8", "fp8-delayed"}) {
    const auto recipe = lowp::train::find_train_recipe(name);
    pr::PointOptions every = point(4);
    every.reuse_seed_free = false;
    const auto want = pr::probe_point(theta, recipe, batches, every);
    const auto got = pr::probe_point(theta, recipe, batches, point(4));
    ASSERT_EQ(got.size(), want.size()) << name;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const pr::Row &g = got[i], &w = want[i];
      const std::string at = std::string(name) + " " + std::to_string(w.layer) + " " + w.tensor + " " + w.gemm;
      ASSERT_EQ(g.tensor + g.gemm, w.tensor + w.gemm) << at;
      for (auto [x, y] : {std::pair{g.rel_mse.mean, w.rel_mse.mean}, {g.rel_mse.lo, w.rel_mse.lo}, {g.rel_mse.hi, w.rel_mse.hi},
                          {g.bias2.mean, w.bias2.mean}, {g.bias2.lo, w.bias2.lo}, {g.bias2.hi, w.bias2.hi},
                          {g.variance, w.variance}, {g.cosine, w.cosine}, {g.proj, w.proj}, {g.noise_ratio, w.noise_ratio},
                          {g.loss_delta, w.loss_delta}, {g.saturated, w.saturated}, {g.flushed, w.flushed},
                          {g.scale_log2_sd, w.scale_log2_sd}})
        EXPECT_TRUE(same(x, y)) << at << ": " << x << " vs " << y;
    }
  }
}

// uses_seed() against what the passes do: for every built-in recipe on the Llama, one forward
// and backward under two seeds give bitwise the same gradient exactly when uses_seed() is false
// (a recipe judged seed-free that is not would have its variance reported as 0; bf16-pure-sr's
// stochastic rounding is the optimizer's, outside the passes). Mutant checked: uses_seed() blind
// to Round::stochastic on an operand judges nvfp4-train seed-free and fails.
TEST(Probe, UsesSeedSaysWhichRecipesDrawsDiffer) {
  LlamaConfig c = probe_config();
  c.dim = 64, c.hidden_dim = 128, c.n_kv_heads = 2;  // every dimension a multiple of the 32-blocks
  const LlamaModel theta = init_model(c, 4);
  const pr::Batch b = corpus_batches(1, 2, 16)[0];
  int seed_free = 0, seeded = 0;
  for (const lowp::train::TrainRecipe& r : lowp::train::builtin_train_recipes()) {
    if (r.scalify) continue;  // not a TrainLlama: the probe runs its every draw
    const std::unique_ptr<TrainModel> model = make_train_model(r, theta);  // as the probe builds it
    TrainLlama& net = dynamic_cast<TrainLlama&>(*model);
    const std::vector<std::uint8_t> state = net.save_linear_state();  // as the probe: each draw from it
    std::vector<std::vector<float>> g(2);
    for (int d = 0; d < 2; ++d) {
      net.load_linear_state(state);
      net.zero_grad();
      net.forward(b.tokens, b.targets, 2, 16, 0, pr::draw_seed(7, 0, 0, d));
      net.backward(0, pr::draw_seed(7, 0, 0, d));
      for (const auto& p : net.params()) g[d].insert(g[d].end(), p.grad, p.grad + p.size);
    }
    EXPECT_EQ(net.uses_seed(), g[0] != g[1]) << r.name;
    (net.uses_seed() ? seeded : seed_free) += 1;
  }
  EXPECT_GE(seed_free, 10);  // bf16, fp8-*, mxfp8, nvfp4 (round to nearest), switchback-int8, ...
  EXPECT_GE(seeded, 3);      // nvfp4-train, quartet-fp4, quartet2-nvfp4
}

// Stochastic rounding of dY only: each GEMM's output is linear in the rounding, whose mean is its
// input, so E[dX^] = dX and E[dW^] = dW and the dgrad's and wgrad's bias2 intervals hold 0, and so
// does the whole gradient's (linear in every rounding, upstream ones included); rounding toward
// zero shrinks every dY element by up to 2^-3 relative and its bias2 intervals lie above 0.
// Mutant checked: bias2 without the - V / D correction is |ebar|^2 >= V / D > 0 in every batch
// and the SR intervals exclude 0.
TEST(Probe, StochasticRoundingIsUnbiasedAndAPlantedBiasIsFound) {
  const LlamaModel theta = init_model(probe_config(), 5);
  const auto batches = corpus_batches(8, 2, 16);
  const auto sr = pr::probe_point(theta, backward_recipe("sr-dy", "stochastic"), batches, point(4));
  const auto rz = pr::probe_point(theta, backward_recipe("zero-dy", "zero"), batches, point(4));
  for (const char* gemm : {"grad", "dgrad", "wgrad"}) {
    const pr::Row& s = find_row(sr, -1, "model", gemm);
    const pr::Row& z = find_row(rz, -1, "model", gemm);
    // The whole gradient's error sits in few coordinates, so its per-batch bias2 estimates are
    // skewed and a t interval over 8 batches is only approximate (here it ends just below 0,
    // at -1e-6 against a variance of 2e-4): there the planted bias must stand clear of SR's.
    if (std::string(gemm) == "grad") {
      EXPECT_LT(std::fabs(s.bias2.mean), z.bias2.lo);
      EXPECT_LT(std::fabs(s.bias2.hi), z.bias2.lo);
    } else {
      EXPECT_LE(s.bias2.lo, 0.0) << gemm;
      EXPECT_GE(s.bias2.hi, 0.0) << gemm;
    }
    EXPECT_GT(s.variance, 0.0) << gemm;
    EXPECT_GT(z.bias2.lo, 0.0) << gemm;
    EXPECT_EQ(z.variance, 0.0) << gemm;
  }
}

// E4M3 round to nearest even of v = c x (c = 448 / amax): 3 mantissa bits, spacing 2^(e-3) in
// the binade [2^e, 2^(e+1)), 2^-9 below 2^-6 (subnormals). Written here, independent of lowp.
double e4m3_rne(double v) {
  if (v == 0) return 0;
  const int e = std::max(static_cast<int>(std::floor(std::log2(std::fabs(v)))), -6);
  const double step = std::ldexp(1.0, e - 3);
  return std::min(448.0, std::max(-448.0, std::nearbyint(v / step) * step));
}

// The format's error analysis for a standard Gaussian operand scaled by c:
//   eta(c) = E[(Q(c x) / c - x)^2] / E[x^2].
// In a binade the rounding error is nearly uniform on +-2^(e-4), i.e. variance 2^(2e-6) / 12 =
// x^2 2^-8 / (3 m^2) with m = x / 2^e in [1, 2); weighted by x^2 over a smooth density, m has
// density ~m on [1, 2) and E[1/m^2] = 2 ln 2 / 3, so eta ~ 2^-8 / 3 * 0.462 = 6.0e-4 (a Gaussian
// spans too few binades for that spread of m: its eta depends on where sigma falls in a binade,
// ~7e-4 here). The integral below takes the exact rounding instead of the uniform model (midpoint rule, step
// 1e-4 on [0, 9]: the integrand is piecewise smooth, the error far below the batches' spread).
// Through a dot product of K independent terms x_k w_k the errors add: the relative squared
// error of the GEMM output is eta_a + eta_b (the cross term eta_a eta_b ~ 4e-7 is left out).
double eta(double c) {
  const double h = 1e-4;
  double num = 0;
  for (double x = h / 2; x < 9; x += h) {
    const double e = e4m3_rne(c * x) / c - x;
    num += e * e * std::exp(-x * x / 2);
  }
  return num * h * 2 / std::sqrt(2 * M_PI);
}

// Each GEMM of a per-tensor E4M3 linear, on Gaussian X, W, dY, in isolation: the probe's
// rel_mse interval holds eta_a + eta_b of its two operands. Mutant checked: the fwd reference
// taken from rows 1, 9, 17, ... (an off-by-one in the row gather) gives rel_mse ~ 2.
TEST(Probe, E4M3GemmMatchesTheFormatsErrorAnalysis) {
  lowp::quant::LinearRecipe r;
  r.name = "e4m3-tensor";
  const auto spec = lowp::quant::parse_quant_spec("e4m3");
  r.fwd.a = r.fwd.b = r.dgrad.a = r.dgrad.b = r.wgrad.a = r.wgrad.b = spec;
  const std::size_t M = 256, K = 128, N = 96;
  const int batches = 8, draws = 2;
  pr::GemmMeasure measure(draws, 0);
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  double expect[3] = {0, 0, 0};
  for (int b = 0; b < batches; ++b) {
    std::vector<float> X(M * K), W(N * K), dY(M * N), Y(M * N), dX(M * K);
    double amax[3] = {0, 0, 0};
    for (auto* v : {&X, &W, &dY})
      for (float& e : *v) e = static_cast<float>(normal(rng));
    for (float e : X) amax[0] = std::max(amax[0], static_cast<double>(std::fabs(e)));
    for (float e : W) amax[1] = std::max(amax[1], static_cast<double>(std::fabs(e)));
    for (float e : dY) amax[2] = std::max(amax[2], static_cast<double>(std::fabs(e)));
    const double ex = eta(448 / amax[0]), ew = eta(448 / amax[1]), ed = eta(448 / amax[2]);
    expect[0] += (ex + ew) / batches, expect[1] += (ed + ew) / batches, expect[2] += (ed + ex) / batches;
    lowp::quant::QuantLinear lin(r, K, N, false);
    lin.weight() = W;
    for (int d = 0; d < draws; ++d) {
      std::fill(lin.weight_grad().begin(), lin.weight_grad().end(), 0.0f);
      lin.forward(X.data(), M, Y.data(), 100 + d);
      measure.observe({0, 0, &lin, X.data(), nullptr, Y.data(), nullptr, M, K, N}, d);
      lin.backward(dY.data(), dX.data(), 100 + d);
      measure.observe({0, 0, &lin, X.data(), dY.data(), dX.data(), lin.weight_grad().data(), M, K, N}, d);
    }
    measure.end_batch();
  }
  for (int g = 0; g < 3; ++g) {
    const auto& seg = measure.segs().at({0, g});
    const pr::Figures f = pr::figures_over(seg.batches);
    EXPECT_LE(f.rel_mse.lo, expect[g]) << "gemm " << g;
    EXPECT_GE(f.rel_mse.hi, expect[g]) << "gemm " << g;
    // The uniform model bounds it whatever the mantissas' spread: E[1/m^2] in [1/4, 1], so
    // eta_a + eta_b in [2 * 2^-8 / 12, 2 * 2^-8 / 3].
    EXPECT_GE(expect[g], 2 * 0x1p-8 / 12);
    EXPECT_LE(expect[g], 2 * 0x1p-8 / 3);
    EXPECT_EQ(f.variance, 0.0);
  }
}

// The whole-model and one tensor's figures against a direct float64 computation from the
// gradients of fp32 and recipe passes run here (every draw kept, two-pass variance). The sums
// run over ~1e5 elements: relative rounding ~1e5 * 2^-53 ~ 1e-11, so 1e-9 of the rel_mse bounds
// every difference. Mutant checked: the probe's draws seeded as draw + 1 (draw_seed(..., d + 1))
// moves every figure by the draws' spread and fails.
TEST(Probe, WholeModelFiguresEqualADirectFloat64Computation) {
  const LlamaModel theta = init_model(probe_config(), 9);
  const lowp::train::TrainRecipe recipe = backward_recipe("sr-dy", "stochastic");
  const auto batches = corpus_batches(3, 2, 16);
  const pr::PointOptions o = point(3);
  const auto rows = pr::probe_point(theta, recipe, batches, o);

  TrainLlama ref(theta, lowp::quant::linear_preset("fp32"));
  TrainLlama net(theta, [&](int k, std::size_t l) { return lowp::train::linear_for(recipe, static_cast<LinearKind>(k), l, 2); },
                 &recipe.classifier);
  const auto grads = [](TrainLlama& m, const std::string& only) {
    std::vector<double> g;
    for (const auto& p : m.params())
      if (only.empty() || p.name == only) g.insert(g.end(), p.grad, p.grad + p.size);
    return g;
  };
  for (const std::string only : {"", "layers.1.w_down"}) {
    std::vector<double> rel, bias2, var, cosine, proj;
    double loss_delta = 0;
    for (std::size_t b = 0; b < batches.size(); ++b) {
      ref.zero_grad();
      const double lf = ref.forward(batches[b].tokens, batches[b].targets, 2, 16, 0, 0);
      ref.backward(0, 0);
      const std::vector<double> g = grads(ref, only);
      std::vector<std::vector<double>> h;
      for (int d = 0; d < o.draws; ++d) {
        net.zero_grad();
        const std::uint64_t seed = pr::draw_seed(o.seed, o.step, b, d);
        loss_delta += (net.forward(batches[b].tokens, batches[b].targets, 2, 16, 0, seed) - lf) / (3.0 * o.draws);
        net.backward(0, seed);
        h.push_back(grads(net, only));
      }
      const double D = o.draws;
      double gg = 0, r = 0, c = 0, p = 0, eb = 0, v = 0;
      for (double x : g) gg += x * x;
      std::vector<double> mean(g.size(), 0.0);
      for (const auto& hd : h)
        for (std::size_t i = 0; i < g.size(); ++i) mean[i] += hd[i] / D;
      for (const auto& hd : h) {
        double ee = 0, hg = 0, hh = 0;
        for (std::size_t i = 0; i < g.size(); ++i) {
          ee += (hd[i] - g[i]) * (hd[i] - g[i]);
          hg += hd[i] * g[i];
          hh += hd[i] * hd[i];
          v += (hd[i] - mean[i]) * (hd[i] - mean[i]) / (D - 1);
        }
        r += ee / gg / D;
        c += hg / std::sqrt(hh * gg) / D;
        p += hg / gg / D;
      }
      for (std::size_t i = 0; i < g.size(); ++i) eb += (mean[i] - g[i]) * (mean[i] - g[i]);
      rel.push_back(r), bias2.push_back((eb - v / D) / gg), var.push_back(v / gg), cosine.push_back(c), proj.push_back(p);
    }
    const auto mean_of = [](const std::vector<double>& x) { return (x[0] + x[1] + x[2]) / 3; };
    const auto half = [&](const std::vector<double>& x) {  // Student t 0.975 quantile, 2 dof: 4.302652729749464
      const double m = mean_of(x);
      double ss = 0;
      for (double e : x) ss += (e - m) * (e - m);
      return 4.302652729749464 * std::sqrt(ss / 2 / 3);
    };
    const pr::Row& row = only.empty() ? find_row(rows, -1, "model", "grad") : find_row(rows, 1, "w_down", "grad");
    const double tol = 1e-9 * mean_of(rel);
    EXPECT_NEAR(row.rel_mse.mean, mean_of(rel), tol) << only;
    EXPECT_NEAR(row.rel_mse.hi, mean_of(rel) + half(rel), tol) << only;
    EXPECT_NEAR(row.bias2.mean, mean_of(bias2), tol) << only;
    EXPECT_NEAR(row.bias2.lo, mean_of(bias2) - half(bias2), tol) << only;
    EXPECT_NEAR(row.variance, mean_of(var), tol) << only;
    EXPECT_NEAR(row.cosine, mean_of(cosine), 1e-12) << only;
    EXPECT_NEAR(row.proj, mean_of(proj), 1e-12) << only;
    EXPECT_NEAR(row.noise_ratio, 1 / std::sqrt(mean_of(rel)), 1e-9 / std::sqrt(mean_of(rel))) << only;
    EXPECT_GT(row.variance, 0.0);
    if (only.empty()) {
      EXPECT_NEAR(row.loss_delta, loss_delta, 1e-12);
    }
  }
}

// The whole command's files at 1 and 2 threads: the same bytes, with probe.csv's columns.
// Mutant checked: summing a tensor's elements in thread-dependent chunks would break the bytes
// (the probe sums in element order on one thread).
TEST(Probe, FilesAreTheSameBytesAtAnyThreadCount) {
  const auto dir = lowp::test::train_temp_dir("probe", "threads");
  std::string csv[2], json[2], svg[2];
  for (int threads : {1, 2}) {
    pr::Options o;
    o.corpus = lowp::test::train_corpus().string();
    o.config = probe_config();
    o.recipes = {"fp8-tensorwise", "nvfp4"};
    o.at = {0, 3};
    o.batches = 2, o.draws = 2, o.batch = 2, o.threads = threads;
    o.out = (dir / std::to_string(threads)).string();
    pr::write_probe(o.out, pr::run_probe(o, {}), o);
    csv[threads - 1] = lowp::test::slurp(dir / std::to_string(threads) / "probe.csv");
    json[threads - 1] = lowp::test::slurp(dir / std::to_string(threads) / "probe.json");
    svg[threads - 1] = lowp::test::slurp(dir / std::to_string(threads) / "probe.svg");
  }
  EXPECT_EQ(csv[0], csv[1]);
  EXPECT_EQ(json[0], json[1]);
  EXPECT_EQ(svg[0], svg[1]);
  EXPECT_EQ(csv[0].substr(0, csv[0].find('\n')),
            "recipe,step,layer,tensor,gemm,rel_mse,rel_mse_lo,rel_mse_hi,bias2,bias2_lo,bias2_hi,variance,cosine,proj,"
            "noise_ratio,loss_delta,saturated,flushed,scale_log2_sd");
  EXPECT_NE(csv[0].find("\nnvfp4,3,-1,model,grad,"), std::string::npos);
  EXPECT_NE(csv[0].find("\nfp8-tensorwise,0,1,w_down,wgrad,"), std::string::npos);
}

// `lowp probe` takes lowp train's shape options (cli/model_shape.hpp): given the same shape, lr,
// batch and seed, the probe's fp32 trajectory (DIR/fp32/log.csv) is the training run's loss for
// loss, so a probe can stand beside a comparison of the same model (docs/training.md, "Recipe
// tables that rank"). Mutant checked: the probe forcing 2 layers whatever --layers says gives
// other losses.
TEST(Probe, CliTakesTrainsShapeOptionsAndFollowsTheSameRun) {
  const auto dir = lowp::test::train_temp_dir("probe", "cli_shape");
  const std::vector<std::string> shape = {"--corpus", lowp::test::train_corpus().string(), "--dim", "32", "--layers", "1",
                                          "--heads", "2", "--kv-heads", "1", "--hidden", "64", "--ctx", "16",
                                          "--batch", "2", "--lr", "3e-3", "--seed", "5", "--threads", "1"};
  auto probe = std::vector<std::string>{"probe", "--recipes", "bf16", "--at", "0,4", "--batches", "1", "--draws", "2",
                                        "--out", (dir / "probe").string()};
  auto train = std::vector<std::string>{"train", "--steps", "4", "--out", (dir / "train").string()};
  probe.insert(probe.end(), shape.begin(), shape.end());
  train.insert(train.end(), shape.begin(), shape.end());
  const auto p = lowp::test::lowp_run(probe), t = lowp::test::lowp_run(train);
  ASSERT_EQ(p.code, 0) << p.err;
  ASSERT_EQ(t.code, 0) << t.err;
  const std::vector<double> from_probe = lowp::test::train_losses(dir / "probe" / "fp32");
  EXPECT_EQ(from_probe.size(), 4u);  // one row per step
  EXPECT_EQ(from_probe, lowp::test::train_losses(dir / "train"));
  // The shape of a checkpoint is its own, in both commands.
  auto with_init = std::vector<std::string>{"probe", "--init", (dir / "train" / "model.bin").string(), "--dim", "32",
                                            "--recipes", "bf16", "--corpus", lowp::test::train_corpus().string(),
                                            "--out", (dir / "bad").string()};
  const auto bad = lowp::test::lowp_run(with_init);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "lowp probe: --init takes the model's shape from " + (dir / "train" / "model.bin").string() +
                         ": --dim/--layers/--heads/--kv-heads/--hidden cannot be given with it\n");
}

}  // namespace
