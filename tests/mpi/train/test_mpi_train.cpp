// Data-parallel `mpirun --oversubscribe -np N lowp train` on localhost against the
// single-process run with the same global batch and micro-batches: log.csv (but
// tokens_per_second), quant.csv and every checkpoint file byte-equal for N = 2 and 3, under
// fp32, fp8-delayed (amax histories across ranks) and nvfp4-train (stochastic rounding, random
// Hadamard signs); --resume under mpirun; --grad-comm e4m3 changes the loss; --recipes split
// across ranks writes the same summary.csv and loss.svg; a failing rank ends the job.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "train/trainer.hpp"
#include "train_files.hpp"

namespace {

namespace fs = std::filesystem;

using lowp::test::log_without_speed;
using lowp::test::slurp;

fs::path temp_dir(const std::string& name) { return lowp::test::train_temp_dir("test_mpi_train", name); }
fs::path corpus() { return lowp::test::train_corpus(); }

bool have_mpirun() { return std::string(LOWP_MPIEXEC).size() > 0 && fs::exists(LOWP_MPIEXEC); }

#define REQUIRE_MPIRUN() \
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found (install openmpi-bin): MPI training tests skipped"

struct Outcome {
  int code;
  std::string out;
};

// `lowp args` with `ranks` > 0 under mpirun; stdout and stderr together.
Outcome lowp(int ranks, const std::vector<std::string>& args, const fs::path& log) {
  std::string cmd = std::string(LOWP_MPI_ENV) + " OMP_NUM_THREADS=1 timeout 120 ";
  if (ranks > 0) cmd += std::string(LOWP_MPIEXEC) + " --oversubscribe -np " + std::to_string(ranks) + " ";
  cmd += LOWP_PROGRAM;
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " > '" + log.string() + "' 2>&1";
  const int st = std::system(cmd.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128, slurp(log)};
}

// A global batch of 6 windows in micro-batches of 2: 3 micro-batches, dealt 2+1 or 1+1+1.
std::vector<std::string> args(const fs::path& out, std::initializer_list<std::string> more) {
  std::vector<std::string> a = {"train", "--corpus", corpus().string(), "--config", "tiny", "--ctx", "32",
                                "--batch", "6", "--micro-batch", "2", "--lr", "3e-3", "--seed", "7",
                                "--steps", "4", "--eval-every", "2", "--threads", "1", "--out", out.string()};
  a.insert(a.end(), more);
  return a;
}

void expect_same_run(const fs::path& a, const fs::path& b) {
  const std::string la = log_without_speed(a);
  EXPECT_GT(la.size(), 100u) << a;
  EXPECT_EQ(la, log_without_speed(b)) << b;
  for (const char* f : {"state.bin", "model.bin", "model.gguf", "model.safetensors", "config.json", "quant.csv"}) {
    EXPECT_TRUE(fs::exists(a / f)) << a / f;
    EXPECT_TRUE(slurp(a / f) == slurp(b / f)) << f << " of " << b << " differs from the single-process run";
  }
}

void ranks_equal_single_process(const std::string& recipe) {
  const fs::path d = temp_dir("eq_" + recipe);
  const Outcome one = lowp(0, args(d / "one", {"--recipe", recipe}), d / "one.txt");
  ASSERT_EQ(one.code, 0) << one.out;
  for (int n : {2, 3}) {
    const fs::path out = d / ("np" + std::to_string(n));
    const Outcome r = lowp(n, args(out, {"--recipe", recipe}), d / ("np" + std::to_string(n) + ".txt"));
    ASSERT_EQ(r.code, 0) << r.out;
    expect_same_run(d / "one", out);
  }
}

TEST(MpiTrain, Fp32RanksGiveTheSingleProcessBits) {
  REQUIRE_MPIRUN();
  ranks_equal_single_process("fp32");
}

// The scalify model (every tensor scaled, micro-batch gradients summed as float32 values).
TEST(MpiTrain, ScalifyRanksGiveTheSingleProcessBits) {
  REQUIRE_MPIRUN();
  ranks_equal_single_process("scalify");
}

TEST(MpiTrain, Fp8DelayedRanksGiveTheSingleProcessBits) {
  REQUIRE_MPIRUN();
  ranks_equal_single_process("fp8-delayed");
}

TEST(MpiTrain, Nvfp4StochasticRoundingRanksGiveTheSingleProcessBits) {
  REQUIRE_MPIRUN();
  ranks_equal_single_process("nvfp4-train");
}

TEST(MpiTrain, ResumeUnderMpirunEndsAsTheUninterruptedRun) {
  REQUIRE_MPIRUN();
  const fs::path d = temp_dir("resume");
  ASSERT_EQ(lowp(0, args(d / "full", {"--save-every", "2"}), d / "full.txt").code, 0);
  // The same run killed after step 3: the step-2 checkpoint survives.
  // args() as options: the tiny resume run with this test's batches, steps and checkpoints.
  lowp::accuracy::train::TrainOptions o = lowp::test::tiny_resume_options(d / "cut", "fp32");
  o.batch = 6;
  o.micro_batch = 2;
  o.steps = 4;
  o.eval_every = 2;
  o.save_every = 2;
  o.threads = 1;
  struct Killed {};
  EXPECT_THROW(lowp::accuracy::train::run_training(o, false,
                                                   [](const auto& s) {
                                                     if (s.step == 3) throw Killed{};
                                                   }),
               Killed);
  const Outcome r = lowp(2, {"train", "--resume", (d / "cut").string(), "--steps", "4", "--threads", "1"}, d / "r.txt");
  ASSERT_EQ(r.code, 0) << r.out;
  expect_same_run(d / "full", d / "cut");
}

TEST(MpiTrain, GradCommE4m3RunsAndChangesTheLoss) {
  REQUIRE_MPIRUN();
  const fs::path d = temp_dir("comm");
  const Outcome exact = lowp(2, args(d / "fp32", {}), d / "fp32.txt");
  ASSERT_EQ(exact.code, 0) << exact.out;
  const Outcome q = lowp(2, args(d / "e4m3", {"--grad-comm", "e4m3"}), d / "e4m3.txt");
  ASSERT_EQ(q.code, 0) << q.out;
  EXPECT_NE(q.out.find("gradients communicated in e4m3 across 2 rank(s): mean SQNR"), std::string::npos) << q.out;
  const std::string a = log_without_speed(d / "fp32"), b = log_without_speed(d / "e4m3");
  EXPECT_NE(b.find("grad_comm_sqnr_db"), std::string::npos);
  EXPECT_EQ(a.find("grad_comm_sqnr_db"), std::string::npos);
  // Step 1's loss is before any update; from step 2 on the quantized gradients show.
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  for (int i = 0; i < 2; ++i) std::getline(ia, la), std::getline(ib, lb);  // the header, step 1
  EXPECT_EQ(la.substr(0, la.find(',', 2)), lb.substr(0, lb.find(',', 2)));  // step 1: "1,<loss>"
  std::getline(ia, la);
  std::getline(ib, lb);
  EXPECT_NE(la.substr(0, la.find(',', 2)), lb.substr(0, lb.find(',', 2))) << la << "\n" << lb;
  EXPECT_FALSE(slurp(d / "fp32" / "model.bin") == slurp(d / "e4m3" / "model.bin"));
}

TEST(MpiTrain, RecipesSplitAcrossRanksWriteTheSameSummary) {
  REQUIRE_MPIRUN();
  const fs::path d = temp_dir("recipes");
  const Outcome one = lowp(0, args(d / "one", {"--recipes", "fp32,nvfp4-train,fp8-delayed"}), d / "one.txt");
  ASSERT_EQ(one.code, 0) << one.out;
  const Outcome two = lowp(2, args(d / "two", {"--recipes", "fp32,nvfp4-train,fp8-delayed"}), d / "two.txt");
  ASSERT_EQ(two.code, 0) << two.out;
  EXPECT_EQ(slurp(d / "one" / "summary.csv"), slurp(d / "two" / "summary.csv"));
  EXPECT_EQ(slurp(d / "one" / "loss.svg"), slurp(d / "two" / "loss.svg"));
  EXPECT_NE(slurp(d / "two" / "summary.csv").find("fp8-delayed,"), std::string::npos);
  for (const char* r : {"fp32", "nvfp4-train", "fp8-delayed"}) expect_same_run(d / "one" / r, d / "two" / r);
  // Two seeds on 3 ranks: run i (recipe i / 2, seed 7 + i % 2) goes to rank i mod 3, so each
  // recipe's seeds train on different ranks and rank 0 must put them back in run order. Mutant
  // checked: the gather appending each rank's runs in rank order.
  const Outcome seeds1 = lowp(0, args(d / "s1", {"--recipes", "fp32,nvfp4", "--seeds", "2"}), d / "s1.txt");
  ASSERT_EQ(seeds1.code, 0) << seeds1.out;
  const Outcome seeds3 = lowp(3, args(d / "s3", {"--recipes", "fp32,nvfp4", "--seeds", "2"}), d / "s3.txt");
  ASSERT_EQ(seeds3.code, 0) << seeds3.out;
  EXPECT_EQ(slurp(d / "s1" / "summary.csv"), slurp(d / "s3" / "summary.csv"));
  EXPECT_EQ(slurp(d / "s1" / "seeds.csv"), slurp(d / "s3" / "seeds.csv"));
  EXPECT_NE(slurp(d / "s3" / "seeds.csv").find("nvfp4,8,"), std::string::npos);
}

// `lowp probe`: the (recipe, stop) jobs dealt to 2 and 3 ranks (3 recipes x 2 stops, uneven
// shares) give the single process's files byte for byte. Mutant checked: rank 0 writing only
// its own jobs' rows (no gather) leaves rows out and the bytes differ.
TEST(MpiTrain, ProbeJobsSplitAcrossRanksWriteTheSameFiles) {
  REQUIRE_MPIRUN();
  const fs::path d = temp_dir("probe");
  const auto probe_args = [&](const fs::path& out) {
    return std::vector<std::string>{"probe", "--corpus", corpus().string(), "--config", "tiny", "--ctx", "32",
                                    "--batch", "2", "--recipes", "nvfp4,fp8-delayed,mxfp8", "--at", "0,2",
                                    "--batches", "2", "--draws", "2", "--threads", "1", "--out", out.string()};
  };
  const Outcome one = lowp(0, probe_args(d / "one"), d / "one.txt");
  ASSERT_EQ(one.code, 0) << one.out;
  for (int n : {2, 3}) {
    const fs::path out = d / ("np" + std::to_string(n));
    const Outcome r = lowp(n, probe_args(out), d / ("np" + std::to_string(n) + ".txt"));
    ASSERT_EQ(r.code, 0) << r.out;
    for (const char* f : {"probe.csv", "probe.json", "probe.svg"}) {
      EXPECT_GT(slurp(d / "one" / f).size(), 1000u) << f;
      EXPECT_TRUE(slurp(d / "one" / f) == slurp(out / f)) << f << " of " << out << " differs from the single-process run";
    }
  }
}

TEST(MpiTrain, AFailingRankEndsTheJobWithItsError) {
  REQUIRE_MPIRUN();
  const fs::path d = temp_dir("fail");
  fs::create_directories(d / "out" / "model.bin");  // rank 0 cannot write its first checkpoint
  const Outcome r = lowp(2, args(d / "out", {"--save-every", "1"}), d / "fail.txt");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, 124) << "timed out: a rank waited forever";
  EXPECT_NE(r.out.find("lowp (rank 0 of 2) train:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model.bin"), std::string::npos) << r.out;
}

TEST(MpiTrain, MicroBatchMustDivideTheBatch) {
  const fs::path d = temp_dir("bad");
  std::vector<std::string> a = args(d / "out", {});
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i] == "--micro-batch") a[i + 1] = "4";
  const Outcome r = lowp(0, a, d / "bad.txt");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--micro-batch 4 must divide --batch 6"), std::string::npos) << r.out;
}

}  // namespace
