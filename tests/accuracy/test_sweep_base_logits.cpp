// llama.cpp's --kl-divergence-base file: the layout written (checked byte by byte against the
// format's definition), a file made here by hand read back, the round trip, and bad files.
// llama.cpp's float32 logits files (read_logits_run) against a log-softmax computed here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "llama_test_util.hpp"
#include "lowp/accuracy/base_logits.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/metrics.hpp"
#include "lowp/accuracy/model_sweep.hpp"
#include "model_files.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

template <class T>
T at(const std::vector<std::uint8_t>& b, std::size_t pos) {
  T v;
  std::memcpy(&v, b.data() + pos, sizeof v);
  return v;
}

std::vector<std::uint8_t> bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

EvalRun fp32_run(const LlamaModel& m, const std::vector<int>& tokens, int ctx) {
  EvalOptions opt;
  opt.ctx = ctx;
  return evaluate(m, tokens, find_recipe("fp32"), opt);
}

// Written by lowp, read here with the format's definition: header, tokens, and every row's
// scale / min_log_prob / codes against the run's own log-probabilities.
TEST(BaseLogits, WrittenLayout) {
  LlamaConfig c = gqa_config();
  c.vocab_size = 39;  // odd: rows are padded to an even count of uint16
  const LlamaModel m = make_model(c, 4);
  const auto tokens = random_tokens(45, 39, 6);  // two windows of 20 and a partial one, dropped
  const EvalRun run = fp32_run(m, tokens, 20);
  const std::string dir = temp_dir("base_logits_layout");
  const std::string path = dir + "/base.kld";
  write_base_logits(path, 20, tokens, run);
  const auto b = bytes_of(path);
  const std::size_t nv = 2 * ((39 + 1) / 2) + 4, rows = 2 * (20 - 1 - 10);
  ASSERT_EQ(b.size(), 8 + 12 + 4 * 40 + 2 * nv * rows);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), "_logits_");
  EXPECT_EQ(at<std::int32_t>(b, 8), 20);
  EXPECT_EQ(at<std::int32_t>(b, 12), 39);
  EXPECT_EQ(at<std::int32_t>(b, 16), 2);
  for (int i = 0; i < 40; ++i) ASSERT_EQ(at<std::int32_t>(b, 20 + 4 * i), tokens[i]) << i;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t base = 20 + 4 * 40 + 2 * nv * r;
    const float* lp = run.log_probs.data() + r * 39;
    float mx = lp[0], mn = lp[0];
    for (int v = 0; v < 39; ++v) mx = std::max(mx, lp[v]), mn = std::min(mn, lp[v]);
    mn = std::max(mn, mx - 16);
    const float scale = at<float>(b, base), min_log_prob = at<float>(b, base + 4);
    EXPECT_EQ(scale, (mx - mn) / 65535.f) << r;
    EXPECT_EQ(min_log_prob, mn) << r;
    for (int v = 0; v < 39; ++v) {
      const auto q = at<std::uint16_t>(b, base + 8 + 2 * v);
      if (lp[v] <= mn) ASSERT_EQ(q, 0) << r << " " << v;
      else ASSERT_LE(std::abs(scale * q + min_log_prob - lp[v]), scale * 0.5f + 1e-6f) << r << " " << v;
    }
    EXPECT_EQ(at<std::uint16_t>(b, base + 8 + 2 * 39), 0);  // the padding word
  }
  std::filesystem::remove_all(dir);
}

// Read back: same tokens and targets, log-probabilities within half a step, a KLD of ~0.
TEST(BaseLogits, RoundTrip) {
  const LlamaModel m = small_model(5);
  const auto tokens = random_tokens(48, m.config.vocab_size, 7);
  const EvalRun run = fp32_run(m, tokens, 16);
  const std::string dir = temp_dir("base_logits_rt");
  write_base_logits(dir + "/b", 16, tokens, run);
  const BaseLogits r = read_base_logits(dir + "/b");
  EXPECT_EQ(r.ctx, 16);
  EXPECT_EQ(r.tokens, tokens);
  EXPECT_EQ(r.run.targets, run.targets);
  ASSERT_EQ(r.run.log_probs.size(), run.log_probs.size());
  const Comparison cmp = compare(r.run, run);
  // The format floors log-probabilities at max - 16: each of the 40 entries there carries at
  // most e^-16 of probability into the KLD, times a log-ratio of a few tens.
  EXPECT_LT(cmp.kld_max, 40 * std::exp(-16.0) * 20);
  EXPECT_NEAR(cmp.ppl, cmp.ref_ppl, 1e-4 * cmp.ppl);
  EXPECT_EQ(cmp.same_top1, 100.0);
  EXPECT_NEAR(r.run.nll_sum, run.nll_sum, 1e-3);
  // The sweep against it: fp32 is ~0 from it, a coarser recipe is not.
  const std::vector<Recipe> recipes = {find_recipe("fp32"), find_recipe("mxfp4")};
  EvalOptions opt;
  opt.ctx = 16;
  const ModelSweep s = run_model_sweep(m, tokens, recipes, opt, {}, &r.run);
  EXPECT_EQ(s.reference, "base logits");
  ASSERT_EQ(s.results.size(), 2u);
  EXPECT_EQ(s.results[0].recipe, "fp32");
  EXPECT_LT(s.results[0].cmp.kld_mean, 40 * std::exp(-16.0) * 20);
  EXPECT_GT(s.results[1].cmp.kld_mean, 100 * s.results[0].cmp.kld_mean);
  std::filesystem::remove_all(dir);
}

// A file made here following llama.cpp's writer (vocab 5: rows of 2*3+4 = 10 words).
TEST(BaseLogits, HandMadeFile) {
  ByteSink s;
  s.put_bytes("_logits_", 8);
  s.put<std::int32_t>(4);  // n_ctx: scored positions 2 (target token 3 of the window)
  s.put<std::int32_t>(5);
  s.put<std::int32_t>(2);
  const std::int32_t toks[8] = {1, 2, 3, 4, 1, 0, 2, 3};
  for (auto t : toks) s.put(t);
  const float scale[2] = {0.25f, 0.0f}, mins[2] = {-12.0f, -1.609375f};
  const std::uint16_t q[2][5] = {{0, 48, 4, 46, 47}, {0, 0, 0, 0, 0}};
  for (int r = 0; r < 2; ++r) {
    s.put(scale[r]);
    s.put(mins[r]);
    for (auto v : q[r]) s.put(v);
    s.put<std::uint16_t>(0);
  }
  const std::string dir = temp_dir("base_logits_hand");
  write_file(dir + "/b", s.b);
  const BaseLogits r = read_base_logits(dir + "/b");
  EXPECT_EQ(r.ctx, 4);
  EXPECT_EQ(r.run.targets, (std::vector<int>{4, 3}));
  const std::vector<float> want = {-12, 0, -11, -0.5f, -0.25f, -1.609375f, -1.609375f, -1.609375f, -1.609375f, -1.609375f};
  EXPECT_EQ(r.run.log_probs, want);
  EXPECT_DOUBLE_EQ(r.run.nll_sum, 0.25 + 1.609375);

  // Bad files: each names the file and the problem.
  auto bad = [&](std::vector<std::uint8_t> b, const std::vector<std::string>& parts) {
    write_file(dir + "/x", b);
    expect_error([&] { read_base_logits(dir + "/x"); }, parts);
  };
  auto patched = [&](std::size_t pos, std::int32_t v) {
    auto b = s.b;
    std::memcpy(b.data() + pos, &v, 4);
    return b;
  };
  bad({s.b.begin(), s.b.end() - 1}, {dir + "/x", "implies 92 bytes, the file has 91"});
  bad({s.b.begin(), s.b.begin() + 14}, {dir + "/x", "n_vocab", "runs past the end"});
  auto magic = s.b;
  magic[0] = 'X';
  bad(magic, {dir + "/x", "does not start with '_logits_'"});
  bad(patched(8, 2), {dir + "/x", "n_ctx is 2"});
  bad(patched(12, -5), {dir + "/x", "n_vocab is -5"});
  bad(patched(16, 0), {dir + "/x", "n_chunk is 0"});
  bad(patched(16, INT32_MAX), {dir + "/x", "implies", "the file has 92"});
  bad(patched(20 + 4 * 3, 5), {dir + "/x", "token 3 is id 5, outside [0, 5)"});
  expect_error([&] { read_base_logits(dir + "/missing"); }, {dir + "/missing"});
  std::filesystem::remove_all(dir);
}

TEST(BaseLogits, WriteRefusesRunsThatDoNotFit) {
  const LlamaModel m = small_model(6);
  const auto tokens = random_tokens(32, m.config.vocab_size, 9);
  const std::string dir = temp_dir("base_logits_bad");
  EvalOptions all;
  all.ctx = 16;
  all.score_all = true;
  const EvalRun every = evaluate(m, tokens, find_recipe("fp32"), all);
  expect_error([&] { write_base_logits(dir + "/b", 16, tokens, every); }, {"not the second halves of windows of 16"});
  const EvalRun run = fp32_run(m, tokens, 16);
  expect_error([&] { write_base_logits(dir + "/b", 16, std::vector<int>(tokens.begin(), tokens.begin() + 10), run); },
               {"10 tokens do not fill one window of 16"});
  expect_error([&] { write_base_logits(dir + "/b", 2, tokens, run); }, {"no scored position"});
  EvalRun nan = run;
  nan.log_probs[3] = NAN;
  expect_error([&] { write_base_logits(dir + "/b", 16, tokens, nan); }, {"non-finite log-probability"});
  EXPECT_FALSE(std::filesystem::exists(dir + "/b"));
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // no temporary left behind
  // A refusal found mid-stream leaves an existing file as it was.
  write_base_logits(dir + "/b", 16, tokens, run);
  const auto before = bytes_of(dir + "/b");
  expect_error([&] { write_base_logits(dir + "/b", 16, tokens, nan); }, {"non-finite log-probability"});
  EXPECT_EQ(bytes_of(dir + "/b"), before);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
  std::filesystem::remove_all(dir);
}

// A float32 logits file (`lowp search --base-logits`) of 37 tokens in windows of 16 (two full
// windows and one of 5), scored here in double: the second halves, then every position; a row
// holding NaN counted in `nonfinite`, not summed; files of the wrong size or missing.
// Tolerance: the code's log-probabilities are double results (a few ulps on |x| < 40, below
// 1e-12) rounded to float32 (half an ulp: 2^-24 |x|); its NLL stays double: 1e-12 per row.
TEST(BaseLogits, FloatLogitsFile) {
  const LlamaModel m = small_model(6);
  const std::size_t V = static_cast<std::size_t>(m.config.vocab_size), n = 37, ctx = 16, bad_row = 27;
  const auto tokens = random_tokens(n, m.config.vocab_size, 11);
  std::vector<float> logits(n * V);
  std::mt19937 gen(5);
  std::normal_distribution<float> dist(0.f, 3.f);
  for (auto& x : logits) x = dist(gen);
  logits[bad_row * V + 3] = NAN;  // window 1, t = 11: scored either way
  const std::string dir = temp_dir("float_logits");
  const std::string path = dir + "/l.f32";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(logits.data()),
                                               static_cast<std::streamsize>(logits.size() * sizeof(float)));
  for (bool all : {false, true}) {
    EvalOptions opt;
    opt.ctx = static_cast<int>(ctx);
    opt.score_all = all;
    const EvalRun run = read_logits_run(path, m, tokens, opt);
    std::vector<std::size_t> rows;
    for (std::size_t start = 0; start < n; start += ctx) {
      const std::size_t T = std::min(ctx, n - start);
      for (std::size_t t = all ? 0 : T / 2; t + 1 < T; ++t) rows.push_back(start + t);
    }
    ASSERT_EQ(run.vocab, V);
    ASSERT_EQ(run.targets.size(), rows.size()) << all;
    ASSERT_EQ(run.log_probs.size(), rows.size() * V) << all;
    double nll = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::size_t p = rows[r];
      EXPECT_EQ(run.targets[r], tokens[p + 1]) << p;
      if (p == bad_row) continue;
      double mx = -INFINITY, sum = 0;
      for (std::size_t j = 0; j < V; ++j) mx = std::max(mx, static_cast<double>(logits[p * V + j]));
      for (std::size_t j = 0; j < V; ++j) sum += std::exp(logits[p * V + j] - mx);
      const double lse = mx + std::log(sum);
      for (std::size_t j = 0; j < V; ++j) {
        const double want = logits[p * V + j] - lse;
        ASSERT_NEAR(run.log_probs[r * V + j], want, std::ldexp(std::fabs(want), -24) + 1e-12) << p << " " << j;
      }
      nll += lse - logits[p * V + static_cast<std::size_t>(tokens[p + 1])];
    }
    EXPECT_EQ(run.nonfinite, 1u);
    EXPECT_NEAR(run.nll_sum, nll, 1e-12 * static_cast<double>(rows.size()));
  }
  std::ofstream(dir + "/short", std::ios::binary).write(reinterpret_cast<const char*>(logits.data()),
                                                        static_cast<std::streamsize>((logits.size() - 1) * sizeof(float)));
  EvalOptions opt;
  opt.ctx = static_cast<int>(ctx);
  expect_error([&] { read_logits_run(dir + "/short", m, tokens, opt); },
               {dir + "/short", "holds " + std::to_string((n * V - 1) * 4) + " bytes", "are " + std::to_string(n * V * 4)});
  expect_error([&] { read_logits_run(dir + "/missing", m, tokens, opt); }, {"cannot read " + dir + "/missing"});
  std::filesystem::remove_all(dir);
}

}  // namespace
