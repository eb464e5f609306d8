// `lowp train --recipes ... --seeds K` (train/compare.hpp): the statistics of summary.csv
// recomputed here from the per-seed final losses the runs wrote in their log.csv (mean,
// standard error, the seed-paired Student-t 95% interval, with the t quantile in closed form),
// the seeds really differing (each run's first loss is its own seed's initial weights on its
// own seed's batch, and no other pairing), K = 1 unchanged, and bad --seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.hpp"
#include "lowp/numerics/error.hpp"
#include "train/compare.hpp"
#include "train/llama_train.hpp"
#include "train/train_files.hpp"
#include "recipe/train_recipe.hpp"
#include "train/trainer.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::test::slurp;

fs::path seeds_dir(const std::string& name) { return lowp::test::train_temp_dir("test_train_seeds", name); }

std::vector<std::string> args(const fs::path& out, std::initializer_list<std::string> more) {
  std::vector<std::string> a = {"train", "--corpus", lowp::test::train_corpus().string(), "--config", "tiny", "--ctx", "32",
                                "--batch", "4", "--lr", "3e-3", "--steps", "4", "--eval-every", "2", "--threads", "1",
                                "--out", out.string()};
  a.insert(a.end(), more);
  return a;
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream c(line);
    for (std::string x; std::getline(c, x, ',');) cells.push_back(x);
    rows.push_back(cells);
  }
  return rows;
}

// column name -> value, per recipe, of summary.csv
std::map<std::string, std::map<std::string, std::string>> summary(const fs::path& dir) {
  const auto rows = csv_rows(slurp(dir / "summary.csv"));
  std::map<std::string, std::map<std::string, std::string>> m;
  for (std::size_t r = 1; r < rows.size(); ++r)
    for (std::size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c) m[rows[r][0]][rows[0][c]] = rows[r][c];
  return m;
}

// log.csv's (step, train_loss, val_loss) columns: the first train loss and the last val loss.
double log_value(const fs::path& run, bool first_train_loss) {
  const auto rows = csv_rows(slurp(run / "log.csv"));
  double v = NAN;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    if (first_train_loss) return std::atof(rows[r][1].c_str());
    if (rows[r].size() > 2 && !rows[r][2].empty()) v = std::atof(rows[r][2].c_str());
  }
  return v;
}

double num(const std::map<std::string, std::string>& row, const std::string& col) {
  const auto it = row.find(col);
  EXPECT_NE(it, row.end()) << col;
  return it == row.end() ? NAN : std::atof(it->second.c_str());
}

TEST(TrainSeeds, SummaryStatisticsMatchAnIndependentComputationFromThePerSeedLogs) {
  const fs::path out = seeds_dir("k3");
  const auto r = lowp::test::lowp_run(args(out, {"--recipes", "fp32,bf16-pure", "--seeds", "3", "--seed", "11"}));
  ASSERT_EQ(r.code, 0) << r.err;
  // Student's t with 2 degrees of freedom has the CDF 1/2 + t / (2 sqrt(2 + t^2)), so its
  // 0.975 quantile solves t / sqrt(2 + t^2) = 0.95.
  const double t2 = 0.95 * std::sqrt(2.0 / (1.0 - 0.95 * 0.95));
  EXPECT_NEAR(lowp::accuracy::train::t_quantile_975(2), t2, 1e-12);
  EXPECT_NEAR(lowp::accuracy::train::t_quantile_975(1), std::tan(M_PI * 0.475), 1e-9);  // Cauchy
  std::map<std::string, std::vector<double>> loss;
  for (const std::string recipe : {"fp32", "bf16-pure"})
    for (int s = 11; s <= 13; ++s) {
      const fs::path run = out / recipe / ("seed" + std::to_string(s));
      ASSERT_TRUE(fs::exists(run / "log.csv")) << run;
      loss[recipe].push_back(log_value(run, false));
    }
  const auto sum = summary(out);
  ASSERT_EQ(sum.size(), 2u);
  const double K = 3;
  double ref = 0;
  for (double x : loss["fp32"]) ref += x / K;
  for (const std::string recipe : {"fp32", "bf16-pure"}) {
    const auto& l = loss[recipe];
    double mean = 0, ss = 0, dm = 0, dss = 0;
    for (double x : l) mean += x / K;
    for (double x : l) ss += (x - mean) * (x - mean);
    std::vector<double> d;
    for (int i = 0; i < 3; ++i) d.push_back(l[i] - loss["fp32"][i]);
    for (double x : d) dm += x / K;
    for (double x : d) dss += (x - dm) * (x - dm);
    const double se = std::sqrt(ss / (K - 1)) / std::sqrt(K), half = t2 * std::sqrt(dss / (K - 1)) / std::sqrt(K);
    const auto& row = sum.at(recipe);
    // summary.csv prints 6 decimals (3 for percentages); log.csv 9 significant digits.
    const double tol = 6e-7, tol_pct = 6e-4;
    EXPECT_EQ(row.at("seeds"), "3");
    EXPECT_NEAR(num(row, "final_val_loss"), mean, tol) << recipe;
    EXPECT_NEAR(num(row, "final_val_loss_se"), se, tol) << recipe;
    EXPECT_NEAR(num(row, "gap"), dm, tol) << recipe;
    EXPECT_NEAR(num(row, "gap_lo"), dm - half, tol) << recipe;
    EXPECT_NEAR(num(row, "gap_hi"), dm + half, tol) << recipe;
    EXPECT_NEAR(num(row, "gap_pct"), 100 * dm / ref, tol_pct) << recipe;
    EXPECT_NEAR(num(row, "gap_pct_lo"), 100 * (dm - half) / ref, tol_pct) << recipe;
    EXPECT_NEAR(num(row, "gap_pct_hi"), 100 * (dm + half) / ref, tol_pct) << recipe;
    EXPECT_EQ(row.at("exceeds_noise"), (dm - half > 0 || dm + half < 0) ? "1" : "0") << recipe;
  }
  EXPECT_GT(num(sum.at("fp32"), "final_val_loss_se"), 0.0) << "the seeds gave fp32 one loss";
  // seeds.csv holds the same per-seed losses.
  const auto seeds = csv_rows(slurp(out / "seeds.csv"));
  ASSERT_EQ(seeds.size(), 7u);
  EXPECT_EQ(seeds[0], (std::vector<std::string>{"recipe", "seed", "final_val_loss"}));
  for (std::size_t i = 1; i < seeds.size(); ++i) {
    const auto& l = loss[seeds[i][0]];
    const int s = std::atoi(seeds[i][1].c_str());
    ASSERT_TRUE(s >= 11 && s <= 13 && !l.empty()) << seeds[i][0] << " " << seeds[i][1];
    EXPECT_EQ(std::atof(seeds[i][2].c_str()), l[static_cast<std::size_t>(s - 11)]);
  }
  // The report names the noise and the chart carries the intervals.
  EXPECT_NE(r.out.find("95% Student-t interval"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(sum.at("bf16-pure").at("exceeds_noise") == "1" ? "LARGER than the noise" : "within the noise"), std::string::npos)
      << r.out;
  EXPECT_NE(slurp(out / "loss.svg").find("mean of 3 seeds"), std::string::npos);
}

// Each seed's run starts from that seed's initial weights and draws that seed's batches: its
// first training loss is the fp32 forward of init_model(seed) on batch_offsets(seed, step 1),
// and no other seed's weights or batches give it.
TEST(TrainSeeds, EachSeedSetsTheInitialWeightsAndTheBatchOrder) {
  const fs::path out = seeds_dir("differ");
  const auto r = lowp::test::lowp_run(args(out, {"--recipes", "fp32", "--seeds", "3", "--seed", "4"}));
  ASSERT_EQ(r.code, 0) << r.err;
  lowp::accuracy::train::TrainOptions o;
  o.config = lowp::accuracy::train::named_config("tiny");
  o.config.seq_len = 32;
  const std::size_t B = 4, T = 32;
  const std::string text = slurp(lowp::test::train_corpus());
  const std::size_t n_train = text.size() - text.size() / 10;
  const auto recipe = lowp::train::find_train_recipe("fp32");
  // The loss of seed w's initial weights on seed b's first batch.
  const auto first_loss = [&](std::uint64_t w, std::uint64_t b) {
    lowp::accuracy::train::TrainLlama net(lowp::accuracy::train::init_model(o.config, w, true), [&](int linear, std::size_t layer) {
      return lowp::train::linear_for(recipe, static_cast<lowp::accuracy::LinearKind>(linear), layer, 2);
    }, &recipe.classifier);
    std::vector<int> tok(B * T), tgt(B * T);
    const auto off = lowp::accuracy::train::batch_offsets(b, 1, B, n_train - T);
    for (std::size_t i = 0; i < B; ++i)
      for (std::size_t t = 0; t < T; ++t) {
        tok[i * T + t] = static_cast<unsigned char>(text[off[i] + t]);
        tgt[i * T + t] = static_cast<unsigned char>(text[off[i] + t + 1]);
      }
    return net.forward(tok, tgt, B, T, 1, 0);
  };
  std::vector<double> logged;
  for (std::uint64_t s = 4; s <= 6; ++s) {
    const fs::path run = out / "fp32" / ("seed" + std::to_string(s));
    EXPECT_NE(slurp(run / "train.cfg").find("\nseed = " + std::to_string(s) + "\n"), std::string::npos) << run;
    logged.push_back(log_value(run, true));
  }
  for (std::uint64_t w = 4; w <= 6; ++w)
    for (std::uint64_t b = 4; b <= 6; ++b) {
      const double l = first_loss(w, b), want = logged[w - 4];
      // log.csv keeps 9 significant digits of the same float32 forward.
      if (w == b)
        EXPECT_NEAR(l, want, 1e-8 * want) << "seed " << w;
      else
        EXPECT_GT(std::fabs(l - want), 1e-6 * want) << "weights of seed " << w << " on the batch of seed " << b;
    }
  EXPECT_NE(lowp::accuracy::train::batch_offsets(4, 1, B, n_train - T), lowp::accuracy::train::batch_offsets(5, 1, B, n_train - T));
}

TEST(TrainSeeds, OneSeedKeepsTodaysLayoutAndColumnsAndSaysItHasNoNoiseEstimate) {
  const fs::path out = seeds_dir("k1");
  const auto r = lowp::test::lowp_run(args(out, {"--recipes", "bf16", "--seed", "3"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "fp32" / "log.csv"));
  EXPECT_TRUE(fs::exists(out / "bf16" / "log.csv"));
  EXPECT_FALSE(fs::exists(out / "seeds.csv"));
  const auto rows = csv_rows(slurp(out / "summary.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"recipe", "final_val_loss", "gap_pct"}));
  const double fp32 = log_value(out / "fp32", false), bf16 = log_value(out / "bf16", false);
  EXPECT_NEAR(std::atof(rows[1][1].c_str()), fp32, 6e-7);
  EXPECT_NEAR(std::atof(rows[2][2].c_str()), 100 * (bf16 - fp32) / fp32, 6e-4);
  EXPECT_NE(r.out.find("one seed: no noise estimate"), std::string::npos) << r.out;
}

TEST(TrainSeeds, BadSeedsIsOneClearError) {
  const fs::path out = seeds_dir("bad");
  for (const std::string bad : {"0", "-2", "three", "2.5", ""}) {
    const auto r = lowp::test::lowp_run(args(out, {"--recipes", "bf16", "--seeds", bad}));
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--seeds"), std::string::npos) << bad << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << bad << ": " << r.err;
    EXPECT_FALSE(fs::exists(out / "fp32")) << bad << ": trained anyway";
  }
  const auto alone = lowp::test::lowp_run(args(out, {"--recipe", "bf16", "--seeds", "3"}));
  EXPECT_EQ(alone.code, 2);
  EXPECT_NE(alone.err.find("--recipes"), std::string::npos) << alone.err;
  EXPECT_THROW(lowp::accuracy::train::seed_stats({1.0, 2.0}, {1.0}), lowp::Error);
}

}  // namespace
