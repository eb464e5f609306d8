// Micro-batch accumulation (train/data_parallel.hpp), no MPI: a step of one micro-batch is the
// plain forward/backward step bit for bit; m < B gives the in-order float sum of gradients
// computed independently per micro-batch, and (fp32) the batch's gradient up to rounding;
// the emulated gradient communication against independent roundings.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <vector>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/linear.hpp"
#include "train/data_parallel.hpp"
#include "train/llama_train.hpp"
#include "train/trainer.hpp"

namespace {

using namespace lowp::accuracy::train;
using lowp::accuracy::LlamaModel;

constexpr std::size_t kB = 4, kT = 16;

LlamaModel tiny_model() {
  auto c = named_config("tiny");
  c.seq_len = static_cast<int>(kT);
  return init_model(c, 11);
}

void batch(std::vector<int>& tok, std::vector<int>& tgt) {
  tok.resize(kB * kT);
  tgt.resize(kB * kT);
  for (std::size_t i = 0; i < kB * kT; ++i) {
    tok[i] = static_cast<int>((i * 37 + i / 5) % 258);
    tgt[i] = static_cast<int>((i * 91 + 3) % 258);
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

MicroBatches plan(std::size_t m) {
  MicroBatches mb;
  mb.batch = kB;
  mb.micro = m;
  mb.window = kT;
  mb.range = {0, kB / m};
  mb.threads = 1;
  return mb;
}

const auto kNoNonFinite = [](const std::string& t) { FAIL() << "non-finite loss at " << t; };

class MicroBatch : public ::testing::TestWithParam<const char*> {};

TEST_P(MicroBatch, OneMicroBatchIsThePlainStepBitForBit) {
  const auto& recipe = lowp::quant::linear_preset(GetParam());
  std::vector<int> tok, tgt;
  batch(tok, tgt);
  const std::uint64_t seed = 0x5eed;
  TrainLlama plain(tiny_model(), recipe);
  plain.zero_grad();
  const double loss = plain.forward(tok, tgt, kB, kT, 1, seed);
  plain.backward(1, seed);
  TrainLlama net(tiny_model(), recipe);
  const LocalStep s = run_micro_batches(net, tok, tgt, plan(kB), seed, kNoNonFinite);
  ASSERT_EQ(s.grads.size(), 1u);
  EXPECT_TRUE(same_bits(s.grads[0], flat_grad(plain)));
  ASSERT_EQ(s.sums.size(), 1u);
  EXPECT_EQ(s.sums[0][0], loss);
}

TEST_P(MicroBatch, SumIsTheInOrderSumOfIndependentMicroBatchGradients) {
  const auto& recipe = lowp::quant::linear_preset(GetParam());
  std::vector<int> tok, tgt;
  batch(tok, tgt);
  const std::uint64_t seed = 0x5eed;
  for (const std::size_t m : {std::size_t{1}, std::size_t{2}}) {
    TrainLlama net(tiny_model(), recipe);
    net.defer_amax(true);  // as the trainer: every micro-batch sees the scales of the step before
    const LocalStep s = run_micro_batches(net, tok, tgt, plan(m), seed, kNoNonFinite);
    ASSERT_EQ(s.grads.size(), 1u);
    // Each micro-batch on a fresh model, its loss gradient divided by the batch's tokens.
    std::vector<float> sum;
    double loss = 0;
    for (std::size_t k = 0; k < kB / m; ++k) {
      TrainLlama one(tiny_model(), recipe);
      one.zero_grad();
      const std::span<const int> t(tok.data() + k * m * kT, m * kT), y(tgt.data() + k * m * kT, m * kT);
      const std::uint64_t sk = micro_batch_seed(seed, k);
      loss += one.forward(t, y, m, kT, 1, sk) * static_cast<double>(m) / kB;
      one.backward(1, sk, kB * kT);
      const std::vector<float> g = flat_grad(one);
      if (sum.empty()) {
        sum = g;
      } else {
        for (std::size_t i = 0; i < g.size(); ++i) sum[i] += g[i];
      }
    }
    EXPECT_TRUE(same_bits(s.grads[0], sum)) << "m = " << m;
    double total = 0;
    for (const auto& d : s.sums) total += d[0];
    EXPECT_NEAR(total, loss, 1e-12) << "m = " << m;
    // Kept apart (the terms a later rank adds to the running sum): the same gradients.
    MicroBatches apart = plan(m);
    apart.keep_apart = true;
    TrainLlama again(tiny_model(), recipe);
    again.defer_amax(true);
    const LocalStep a = run_micro_batches(again, tok, tgt, apart, seed, kNoNonFinite);
    ASSERT_EQ(a.grads.size(), kB / m);
    EXPECT_TRUE(same_bits(chain_sum(a.grads, sum.size(), false), sum)) << "m = " << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, MicroBatch, ::testing::Values("fp32", "nvfp4-train", "fp8-delayed"));

// fp32: the micro-batch sum is the batch's gradient up to float rounding; micro-batch 0's
// seed is the step's and later ones differ (the quantized recipes' noise is per micro-batch).
TEST(MicroBatchFp32, SumMatchesTheWholeBatchGradient) {
  std::vector<int> tok, tgt;
  batch(tok, tgt);
  TrainLlama whole(tiny_model(), lowp::quant::linear_preset("fp32"));
  whole.zero_grad();
  const double loss = whole.forward(tok, tgt, kB, kT, 1, 1);
  whole.backward(1, 1);
  const std::vector<float> g = flat_grad(whole);
  TrainLlama net(tiny_model(), lowp::quant::linear_preset("fp32"));
  const LocalStep s = run_micro_batches(net, tok, tgt, plan(1), 1, kNoNonFinite);
  double gmax = 0, dmax = 0, total = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    gmax = std::max(gmax, std::fabs(static_cast<double>(g[i])));
    dmax = std::max(dmax, std::fabs(static_cast<double>(g[i]) - s.grads[0][i]));
  }
  for (const auto& d : s.sums) total += d[0];
  EXPECT_GT(gmax, 0);
  EXPECT_LE(dmax, 1e-5 * gmax);
  EXPECT_NEAR(total, loss, 1e-9 * loss);
  EXPECT_EQ(micro_batch_seed(77, 0), 77u);
  EXPECT_NE(micro_batch_seed(77, 1), micro_batch_seed(77, 2));
}

// The trainer with --micro-batch: step 1 (before any update) logs the whole batch's loss and
// gradient norm up to float rounding; --micro-batch B is the run without it, bit for bit.
TEST(MicroBatchTrainer, LogsTheBatchLossAndGradientNorm) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lowp_test_micro_batch_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "corpus.txt");
    for (int i = 0; i < 400; ++i) f << "pack my box with five dozen liquor jugs " << i % 13 << ". ";
  }
  const auto run = [&](int micro, const std::string& name) {
    TrainOptions o;
    o.corpus = (dir / "corpus.txt").string();
    o.config = named_config("tiny");
    o.config.seq_len = 32;
    o.batch = 4;
    o.micro_batch = micro;
    o.steps = 2;
    o.eval_every = 0;
    o.val_windows = 4;
    o.threads = 1;
    o.out = (dir / name).string();
    run_training(o, false, nullptr);
    std::ifstream f(dir / name / "log.csv");
    std::string header, line;
    std::getline(f, header);
    std::getline(f, line);  // step 1
    std::vector<double> v;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) v.push_back(c.empty() ? NAN : std::stod(c));
    return std::make_pair(v, line);
  };
  const auto whole = run(0, "whole"), same = run(4, "same"), micro = run(1, "micro");
  ASSERT_GE(whole.first.size(), 5u);
  EXPECT_EQ(whole.second.substr(0, whole.second.find(',', whole.second.find(',') + 1)),
            same.second.substr(0, same.second.find(',', same.second.find(',') + 1)));
  std::ifstream a(dir / "whole" / "state.bin", std::ios::binary), b(dir / "same" / "state.bin", std::ios::binary);
  EXPECT_TRUE(std::equal(std::istreambuf_iterator<char>(a), {}, std::istreambuf_iterator<char>(b), {}));
  EXPECT_NEAR(micro.first[1], whole.first[1], 1e-6 * whole.first[1]);  // train_loss
  EXPECT_NEAR(micro.first[4], whole.first[4], 1e-4 * whole.first[4]);  // grad_norm
  fs::remove_all(dir);
}

// bf16 round-to-nearest-even, written here from the bit layout.
float bf16_oracle(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}

TEST(GradComm, QuantizesEachTensorWithItsOwnScaling) {
  std::vector<float> g(96 + 40);
  for (std::size_t i = 0; i < g.size(); ++i)
    g[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + 0.3)) * (i < 96 ? 1e-3f : 50.0f);
  const std::size_t sizes[] = {96, 40};
  std::vector<float> q = g;
  EXPECT_EQ(quantize_for_comm(GradComm::fp32, q, sizes).noise, 0.0);
  EXPECT_TRUE(same_bits(q, g));
  q = g;
  const CommError eb = quantize_for_comm(GradComm::bf16, q, sizes);
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(q[i], bf16_oracle(g[i])) << i;
  EXPECT_GT(eb.noise, 0);
  // e4m3 with a per-tensor amax scale: both tensors (1e-3 and 50 in magnitude) keep 3 mantissa
  // bits: relative error at most 2^-4 for elements above amax / 2^6 (the normal range).
  for (const GradComm c : {GradComm::e4m3, GradComm::e5m2, GradComm::mxfp8}) {
    q = g;
    const CommError e = quantize_for_comm(c, q, sizes);
    const double rel = c == GradComm::e5m2 ? 0.125 : 0.0625;
    std::size_t at = 0;
    for (const std::size_t n : sizes) {
      double amax = 0;
      for (std::size_t i = at; i < at + n; ++i) amax = std::max(amax, std::fabs(static_cast<double>(g[i])));
      for (std::size_t i = at; i < at + n; ++i)
        if (std::fabs(g[i]) > amax / 64) {
          EXPECT_LE(std::fabs(q[i] - g[i]), rel * std::fabs(g[i]) * 1.0001) << grad_comm_name(c) << " " << i;
        }
      at += n;
    }
    EXPECT_GT(e.signal, 0);
    EXPECT_GT(e.noise, 0);
    EXPECT_LT(e.noise, e.signal * 0.01);
  }
  EXPECT_THROW(parse_grad_comm("fp16"), lowp::Error);
  EXPECT_EQ(parse_grad_comm("mxfp8"), GradComm::mxfp8);
}

// Delayed scaling deferred over several passes: the scale holds, the history takes one
// value, the max of the passes.
TEST(DeferredAmax, OneHistoryValueAStepFromTheMaxOverPasses) {
  lowp::quant::QuantLinear lin(lowp::quant::linear_preset("fp8-delayed"), 32, 16, false);
  for (std::size_t i = 0; i < lin.weight().size(); ++i) lin.weight()[i] = 0.01f * static_cast<float>(i % 7);
  lin.defer_amax(true);
  std::vector<float> x(4 * 32), y(4 * 16), dy(4 * 16, 0.5f), dx(4 * 32);
  std::vector<float> amax_seen;
  for (const float a : {2.0f, 8.0f, 4.0f}) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = a * (i == 5 ? 1.0f : 0.25f);
    lin.forward(x.data(), 4, y.data(), 1);
    lin.backward(dy.data(), dx.data(), 1);
  }
  const std::vector<float> pending = lin.take_pending_amax();
  ASSERT_EQ(pending.size(), 6u);  // fwd X, W; dgrad dY, W^T; wgrad dY^T, X^T
  EXPECT_EQ(pending[0], 8.0f);    // fwd X: the largest of the three passes
  EXPECT_EQ(pending[5], 8.0f);    // wgrad X^T
  EXPECT_EQ(pending[2], 0.5f);
  EXPECT_EQ(lin.take_pending_amax()[0], -INFINITY);  // taken
  lin.commit_amax(pending);
  EXPECT_THROW(lin.commit_amax(std::vector<float>(5, 1.0f)), lowp::Error);
  // The committed step in the saved state: per history u32 count 1, the amax, the scale.
  const std::vector<std::uint8_t> st = lin.save_state();
  ASSERT_EQ(st.size(), 6u * 12);
  std::uint32_t n = 0;
  float h = 0, s = 0;
  std::memcpy(&n, st.data(), 4);
  std::memcpy(&h, st.data() + 4, 4);
  std::memcpy(&s, st.data() + 8, 4);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(h, 8.0f);
  EXPECT_EQ(s, 448.0f / 8.0f);
}

}  // namespace
