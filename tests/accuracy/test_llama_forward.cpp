// The float32 forward pass against independent oracles: the shared float64 reference logits
// of stories260K, and a token-by-token llama2.c-style forward written in llama_reference.hpp.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include <omp.h>

#include "eval/windows.hpp"
#include "model/layers.hpp"
#include "llama_reference.hpp"
#include "llama_test_util.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/metrics.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

EvalRun run_fp32(const LlamaModel& m, const std::vector<int>& tokens, EvalOptions opt = {}) {
  opt.keep_logits = true;
  return evaluate(m, tokens, find_recipe("fp32"), opt);
}

TEST(LlamaForward, SharedModelMatchesFloat64Reference) {
  LOWP_REQUIRE_SHARED();
  const LlamaModel m = load_llama2c(shared_path("models/stories260K.bin"));
  const auto tokens = read_ids(shared_path("data/stories260K_ref/seqA_tokens.txt"));
  const auto ref = read_binary<double>(shared_path("data/stories260K_ref/seqA_logits_f64le.bin"));
  ASSERT_EQ(tokens.size(), 256u);
  ASSERT_EQ(ref.size(), 256u * 512u);
  EvalOptions opt;
  opt.score_all = true;
  const EvalRun run = run_fp32(m, tokens, opt);
  ASSERT_EQ(run.logits.size(), ref.size());
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(run.logits[i] - ref[i]));
  EXPECT_LE(worst, 2e-4);
  ASSERT_EQ(run.scored(), 255u);
  EXPECT_NEAR(run.nll_sum / 255.0, 2.516541, 1e-5);
  EXPECT_EQ(run.nonfinite, 0u);
}

TEST(LlamaForward, BatchedPrefillEqualsTokenByToken) {
  const LlamaModel m = small_model(3);
  const auto tokens = random_tokens(40, m.config.vocab_size, 5);
  const EvalRun run = run_fp32(m, tokens);
  const auto ref = ReferenceLlama(m).run(tokens);
  EXPECT_LE(max_abs_diff(run.logits, ref), 1e-5f);
}

TEST(LlamaForward, SharedModelBatchedEqualsTokenByToken) {
  LOWP_REQUIRE_SHARED();
  const LlamaModel m = load_llama2c(shared_path("models/stories260K.bin"));
  auto tokens = read_ids(shared_path("data/stories260K_ref/seqA_tokens.txt"));
  tokens.resize(64);
  const EvalRun run = run_fp32(m, tokens);
  const auto ref = ReferenceLlama(m).run(tokens);
  // The trained model's logits reach ~15: float32 summation orders differ by up to ~1.5e-4
  // there (../shared/README.md), so the bound is the one the float64 oracle test uses.
  EXPECT_LE(max_abs_diff(run.logits, ref), 2e-4f);
}

// Windows of ctx tokens each start at position 0; llama.cpp scores the second half of each.
TEST(LlamaForward, WindowsAndSecondHalfScoring) {
  const LlamaModel m = small_model(4);
  const auto tokens = random_tokens(40, m.config.vocab_size, 6);
  EvalOptions opt;
  opt.ctx = 16;  // windows [0,16) [16,32) [32,40)
  const EvalRun run = run_fp32(m, tokens, opt);
  std::vector<float> ref;
  std::vector<int> targets;
  double nll = 0;
  for (std::size_t start = 0; start < tokens.size(); start += 16) {
    const std::size_t T = std::min<std::size_t>(16, tokens.size() - start);
    const std::vector<int> window(tokens.begin() + static_cast<long>(start), tokens.begin() + static_cast<long>(start + T));
    const auto logits = ReferenceLlama(m).run(window);
    ref.insert(ref.end(), logits.begin(), logits.end());
    for (std::size_t t = T / 2; t + 1 < T; ++t) {
      const float* row = logits.data() + t * 40;
      double sum = 0;
      for (int j = 0; j < 40; ++j) sum += std::exp(static_cast<double>(row[j]));
      nll += std::log(sum) - row[window[t + 1]];
      targets.push_back(window[t + 1]);
    }
  }
  EXPECT_LE(max_abs_diff(run.logits, ref), 1e-5f);
  EXPECT_EQ(run.targets, targets);
  EXPECT_EQ(run.scored(), 7u + 7u + 3u);
  EXPECT_NEAR(run.nll_sum, nll, 1e-4);
  ASSERT_EQ(run.log_probs.size(), run.scored() * 40);
  // Each stored row is a log-softmax: its probabilities sum to 1.
  double p = 0;
  for (int j = 0; j < 40; ++j) p += std::exp(static_cast<double>(run.log_probs[j]));
  EXPECT_NEAR(p, 1.0, 1e-6);

  // Without kept logits the classifier runs on the scored rows only: the same scores.
  const EvalRun lean = evaluate(m, tokens, find_recipe("fp32"), opt);
  EXPECT_TRUE(lean.logits.empty());
  EXPECT_EQ(lean.log_probs, run.log_probs);
  EXPECT_EQ(lean.nll_sum, run.nll_sum);

  opt.score_all = true;
  EXPECT_EQ(run_fp32(m, tokens, opt).scored(), 15u + 15u + 7u);
}

TEST(LlamaForward, ScoreWindowRowsOnTheTeamAreSummedInRowOrder) {
  // 300 positions, the second half scored, over 512 logits: enough rows that score_window
  // splits them across the OpenMP team. The oracle is the definition, row by row in order:
  // log-softmax in double (max, then the sum of exps in index order), NLLs summed in row order.
  const std::size_t T = 300, V = 512, first = T / 2;
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> logits(T * V);
  for (float& v : logits) v = nd(gen);
  logits[(first + 7) * V + 3] = std::numeric_limits<float>::quiet_NaN();  // one non-finite row
  const auto tokens = random_tokens(T, static_cast<int>(V), 12);
  std::vector<float> want_lp;
  double want_nll = 0;
  std::size_t want_nonfinite = 0;
  for (std::size_t t = first; t + 1 < T; ++t) {
    const float* row = logits.data() + t * V;
    double mx = -INFINITY, sum = 0;
    bool finite = true;
    for (std::size_t j = 0; j < V; ++j) finite = finite && std::isfinite(row[j]), mx = std::max(mx, double(row[j]));
    for (std::size_t j = 0; j < V; ++j) sum += std::exp(double(row[j]) - mx);
    const double lse = mx + std::log(sum);
    for (std::size_t j = 0; j < V; ++j) want_lp.push_back(static_cast<float>(double(row[j]) - lse));
    if (finite)
      want_nll += lse - row[tokens[t + 1]];
    else
      ++want_nonfinite;
  }
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  for (const bool keep : {true, false}) {
    EvalRun run;
    run.nll_sum = 0.5;  // appended to, as evaluate() does window after window
    run.log_probs.assign(V, 1.0f);
    lowp::accuracy::detail::score_window(logits.data(), tokens, first, V, run, keep);
    EXPECT_EQ(run.nll_sum, 0.5 + want_nll) << keep;
    EXPECT_EQ(run.nonfinite, want_nonfinite) << keep;
    ASSERT_EQ(run.targets.size(), T - 1 - first) << keep;
    EXPECT_EQ(run.targets.back(), tokens.back()) << keep;
    ASSERT_EQ(run.log_probs.size(), V + (keep ? want_lp.size() : 0)) << keep;
    if (keep) {
      EXPECT_EQ(std::memcmp(want_lp.data(), run.log_probs.data() + V, want_lp.size() * sizeof(float)), 0);  // NaN row too
    }
  }
  omp_set_num_threads(saved);
}

TEST(LlamaForward, SwigluIsTheSameAtAnyThreadCountAndNearItsDefinition) {
  // Enough values for both loops to split across threads (40 x 1000 forward, 9 runs of 4096 and
  // a partial one backward), gate and up side by side as the fused [gate | up] GEMM leaves them.
  // Oracle: the definition in double with libm's exp. exp_nonpositive is within 2 ulps, and
  // each side takes a few float (forward) or one final (backward) roundings, so 2^-20 relative
  // to each term's size bounds the difference (the backward's 1 + g (1 - s) can cancel: its
  // bound is relative to the terms, not the sum).
  const std::size_t rows = 40, hidden = 1000, n = 9 * 4096 + 123;
  std::mt19937 gen(21);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> gu(rows * 2 * hidden), g(n), u(n), dh(n);
  for (auto* v : {&gu, &g, &u, &dh})
    for (float& x : *v) x = nd(gen);
  g[5] = -100.0f, g[6] = 100.0f, g[7] = 0.0f;  // exp_nonpositive's flush to 0, and 0
  std::vector<float> h1, dg1, du1;
  for (int threads : {1, 2, 3}) {
    std::vector<float> h(rows * hidden), dg(n), du(n);
    lowp::accuracy::detail::swiglu_forward(h.data(), gu.data(), gu.data() + hidden, rows, hidden, 2 * hidden, threads);
    lowp::accuracy::detail::swiglu_backward(dg.data(), du.data(), dh.data(), g.data(), u.data(), n, threads);
    if (threads == 1) {
      h1 = h, dg1 = dg, du1 = du;
      continue;
    }
    EXPECT_EQ(std::memcmp(h.data(), h1.data(), h.size() * 4), 0) << threads;
    EXPECT_EQ(std::memcmp(dg.data(), dg1.data(), n * 4), 0) << threads;
    EXPECT_EQ(std::memcmp(du.data(), du1.data(), n * 4), 0) << threads;
  }
  const double tol = std::ldexp(1.0, -20);
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t i = 0; i < hidden; ++i) {
      const double x = gu[t * 2 * hidden + i], up = gu[t * 2 * hidden + hidden + i];
      const double want = x / (1 + std::exp(-x)) * up;
      ASSERT_NEAR(h1[t * hidden + i], want, tol * std::fabs(want) + 1e-30) << t << " " << i;
    }
  for (std::size_t i = 0; i < n; ++i) {
    const double x = g[i], s = 1 / (1 + std::exp(-x)), a = double(dh[i]) * u[i] * s;
    ASSERT_NEAR(dg1[i], a * (1 + x * (1 - s)), tol * std::fabs(a) * (1 + std::fabs(x * (1 - s))) + 1e-30) << i;
    ASSERT_NEAR(du1[i], double(dh[i]) * x * s, tol * std::fabs(double(dh[i]) * x * s) + 1e-30) << i;
  }
}

TEST(LlamaForward, SwigluKernelsOfEveryIsaGiveTheSameBits) {
  // The AVX-512 copy of the loops (model/swiglu_avx512.cpp) against the baseline build's, bit for
  // bit: random values and the edges of exp_nonpositive's range (its -87 clamp, flush to 0),
  // zeros, subnormals, infinities and NaN (NaN for NaN), in lengths that leave every vector remainder.
  using lowp::Isa;
  if (!lowp::isa_available(Isa::avx512)) GTEST_SKIP() << "no AVX-512 on this CPU: nothing to compare the scalar loops with";
  std::mt19937 gen(5);
  std::normal_distribution<float> nd(0.0f, 8.0f);
  const float special[] = {0.0f, -0.0f, 87.0f, -87.0f, 87.5f, -87.5f, 88.7f, -103.9f, 1e-40f, -1e-40f,
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), 3e38f, -3e38f, 1e-7f};
  for (const std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{17}, std::size_t{4096 * 9 + 37}}) {
    std::vector<float> g(n), u(n), dh(n);
    for (auto* v : {&g, &u, &dh})
      for (float& x : *v) x = nd(gen);
    for (std::size_t i = 0; i < n; ++i)
      if (i % 7 == 3) g[i] = special[(i / 7) % std::size(special)];
    const auto run = [&](Isa isa) {
      std::vector<float> h(n), dg(n), du(n);
      lowp::accuracy::detail::swiglu_forward(h.data(), g.data(), u.data(), 1, n, n, 2, isa);
      lowp::accuracy::detail::swiglu_backward(dg.data(), du.data(), dh.data(), g.data(), u.data(), n, 2, isa);
      return std::array{h, dg, du};
    };
    const auto want = run(Isa::scalar), got = run(Isa::avx512);
    for (std::size_t k = 0; k < 3; ++k)
      for (std::size_t i = 0; i < n; ++i) {
        if (std::isnan(want[k][i])) {  // x86 leaves a NaN's sign and payload to the operand order
          ASSERT_TRUE(std::isnan(got[k][i])) << "output " << k << " at " << i << " of " << n;
          continue;
        }
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[k][i]), std::bit_cast<std::uint32_t>(want[k][i]))
            << "output " << k << " at " << i << " of " << n << ", g = " << g[i];
      }
  }
}

TEST(LlamaForward, WithoutLogProbsTheSameScores) {
  const LlamaModel m = small_model(4);
  const auto tokens = random_tokens(40, m.config.vocab_size, 6);
  EvalOptions opt;
  opt.ctx = 16;
  const EvalRun full = evaluate(m, tokens, find_recipe("fp32"), opt);
  opt.keep_log_probs = false;
  const EvalRun lean = evaluate(m, tokens, find_recipe("fp32"), opt);
  EXPECT_TRUE(lean.log_probs.empty());
  EXPECT_EQ(full.log_probs.size(), full.scored() * 40);
  EXPECT_EQ(lean.targets, full.targets);
  EXPECT_EQ(lean.nll_sum, full.nll_sum);
}

TEST(LlamaForward, Fp32RecipeHasKldExactlyZero) {
  const LlamaModel m = small_model(5);
  const auto tokens = random_tokens(48, m.config.vocab_size, 7);
  const EvalRun a = run_fp32(m, tokens), b = run_fp32(m, tokens);
  EXPECT_EQ(a.log_probs, b.log_probs);
  EXPECT_TRUE(find_recipe("fp32").is_identity());
  EXPECT_TRUE(a.tensor_errors.empty());
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.kld_mean, 0.0);
  EXPECT_EQ(c.kld_max, 0.0);
  EXPECT_EQ(c.same_top1, 100.0);
}

TEST(LlamaForward, AllThreeLoadersGiveIdenticalLogits) {
  const LlamaModel m = small_model(6, true);
  const std::string dir = temp_dir("llama_loaders");
  write_llama2c(dir + "/m.bin", m);
  write_gguf(dir + "/m.gguf", m);
  write_safetensors(dir + "/hf", m);
  const auto tokens = random_tokens(24, m.config.vocab_size, 8);
  const EvalRun a = run_fp32(load_llama2c(dir + "/m.bin"), tokens);
  const EvalRun b = run_fp32(load_gguf(dir + "/m.gguf"), tokens);
  const EvalRun c = run_fp32(load_safetensors(dir + "/hf"), tokens);
  EXPECT_EQ(a.logits, b.logits);
  EXPECT_EQ(a.logits, c.logits);
  // Tied to N(0, 1) embeddings the logits reach ~30: the bound is relative to that.
  const auto ref = ReferenceLlama(m).run(tokens);
  float top = 0;
  for (float v : ref) top = std::max(top, std::abs(v));
  EXPECT_LE(max_abs_diff(a.logits, ref), 1e-6f * top);
  std::filesystem::remove_all(dir);
}

TEST(LlamaForward, SameResultsAtOneAndTwoThreads) {
  // Large enough that the GEMMs (>= 2^22 multiply-adds per thread) and the quantization
  // kernels (>= 65536 elements) really split across threads.
  LlamaConfig c = gqa_config();
  c.dim = 256;
  c.hidden_dim = 768;
  c.seq_len = 64;
  const LlamaModel m = make_model(c, 7, false);
  const auto tokens = random_tokens(64, m.config.vocab_size, 9);
  for (const char* name : {"fp32", "mxfp4-attn-hadamard", "kv4-hadamard", "quarot-w4a4kv4", "nvfp4"}) {
    EvalOptions one, two;
    one.threads = 1;
    two.threads = 2;
    one.keep_logits = two.keep_logits = true;
    const EvalRun a = evaluate(m, tokens, find_recipe(name), one);
    const EvalRun b = evaluate(m, tokens, find_recipe(name), two);
    EXPECT_EQ(a.logits, b.logits) << name;
    ASSERT_EQ(a.tensor_errors.size(), b.tensor_errors.size()) << name;
    for (std::size_t i = 0; i < a.tensor_errors.size(); ++i) {
      EXPECT_EQ(a.tensor_errors[i].noise, b.tensor_errors[i].noise) << name << " " << a.tensor_errors[i].point;
      EXPECT_EQ(a.tensor_errors[i].signal, b.tensor_errors[i].signal) << name << " " << a.tensor_errors[i].point;
    }
  }
}

}  // namespace
