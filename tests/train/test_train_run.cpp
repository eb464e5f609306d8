// `lowp train` end to end on a tiny config: the loss falls, thread counts and resuming give the
// same bits, the three checkpoint formats read back with identical logits, bad inputs fail
// with one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.hpp"
#include "lowp/numerics/error.hpp"
#include "train/train_files.hpp"
#include "train/trainer.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::test::lowp_run;

fs::path run_dir(const std::string& name) { return lowp::test::train_temp_dir("test_train", name); }

using lowp::test::slurp;


std::vector<std::string> base_args(const fs::path& out) {
  return {"train", "--corpus", lowp::test::train_corpus().string(), "--config", "tiny", "--ctx", "32", "--batch", "4",
          "--lr", "3e-3", "--seed", "7", "--eval-every", "10", "--out", out.string()};
}

std::vector<std::string> with(std::vector<std::string> a, std::initializer_list<std::string> more) {
  a.insert(a.end(), more);
  return a;
}

struct Row {
  int step;
  std::string rest_without_speed;  // every column but tokens_per_second
  double train_loss, val_loss;
};

std::vector<Row> read_log(const fs::path& dir) {
  std::ifstream f(dir / "log.csv");
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line.rfind("step,train_loss,val_loss,lr,grad_norm,tokens_per_second", 0), 0u) << line;
  std::vector<Row> rows;
  while (std::getline(f, line)) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cols.push_back(c);
    if (cols.size() < 6) {
      ADD_FAILURE() << "short log row: " << line;
      continue;
    }
    Row r{std::stoi(cols[0]), "", std::stod(cols[1]), cols[2].empty() ? NAN : std::stod(cols[2])};
    for (std::size_t i = 0; i < cols.size(); ++i)
      if (i != 5) r.rest_without_speed += cols[i] + ",";
    rows.push_back(r);
  }
  return rows;
}

TEST(TrainRun, LossFallsInACISizedRun) {
  const fs::path out = run_dir("falls");
  const auto r = lowp_run(with(base_args(out), {"--steps", "40", "--threads", "2"}));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = read_log(out);
  ASSERT_EQ(rows.size(), 40u);
  EXPECT_TRUE(std::isnan(rows[0].val_loss));
  EXPECT_FALSE(std::isnan(rows.back().val_loss)) << "the last step is always evaluated";
  // ln(258) = 5.55 at the start; the text has 9 words, so it should drop far below 3.
  EXPECT_GT(rows[0].train_loss, 5.0);
  EXPECT_LT(rows.back().val_loss, 3.0);
  for (const char* f : {"model.bin", "model.gguf", "model.safetensors", "config.json", "state.bin"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
}

// fp32, and a recipe with stochastic rounding and fresh random Hadamard signs every step.
TEST(TrainRun, SameSeedSameBitsAtOneAndTwoThreads) {
  for (const std::string recipe : {"fp32", "quartet-fp4"}) {
    const fs::path a = run_dir("t1" + recipe), b = run_dir("t2" + recipe);
    ASSERT_EQ(lowp_run(with(base_args(a), {"--steps", "12", "--threads", "1", "--recipe", recipe})).code, 0);
    ASSERT_EQ(lowp_run(with(base_args(b), {"--steps", "12", "--threads", "2", "--recipe", recipe})).code, 0);
    const auto ra = read_log(a), rb = read_log(b);
    ASSERT_EQ(ra.size(), rb.size());
    for (std::size_t i = 0; i < ra.size(); ++i) EXPECT_EQ(ra[i].rest_without_speed, rb[i].rest_without_speed) << recipe;
    for (const char* f : {"model.bin", "model.gguf", "model.safetensors", "state.bin", "quant.csv"})
      EXPECT_TRUE(slurp(a / f) == slurp(b / f)) << recipe << ": " << f << " differs";
  }
}

TEST(TrainRun, ResumeEndsBitwiseIdenticalToTheUninterruptedRun) {
  const fs::path full = run_dir("full"), cut = run_dir("cut");
  ASSERT_EQ(lowp_run(with(base_args(full), {"--steps", "20", "--save-every", "5", "--threads", "2"})).code, 0);
  // The same run killed after step 13: the step-10 checkpoint survives.
  const lowp::accuracy::train::TrainOptions o = lowp::test::tiny_resume_options(cut, "fp32");
  struct Killed {};
  EXPECT_THROW(lowp::accuracy::train::run_training(o, false,
                                                   [](const auto& s) {
                                                     if (s.step == 13) throw Killed{};
                                                   }),
               Killed);
  ASSERT_EQ(read_log(cut).size(), 13u);
  const auto r = lowp_run({"train", "--resume", cut.string(), "--steps", "20", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ra = read_log(full), rb = read_log(cut);
  ASSERT_EQ(ra.size(), rb.size());
  for (std::size_t i = 0; i < ra.size(); ++i) EXPECT_EQ(ra[i].rest_without_speed, rb[i].rest_without_speed) << "step " << i + 1;
  for (const char* f : {"model.bin", "model.gguf", "model.safetensors", "config.json", "state.bin"})
    EXPECT_TRUE(slurp(full / f) == slurp(cut / f)) << f << " differs";
}

TEST(TrainRun, TheThreeCheckpointFormatsGiveIdenticalEvalLogits) {
  const fs::path out = run_dir("formats");
  ASSERT_EQ(lowp_run(with(base_args(out), {"--steps", "5"})).code, 0);
  std::string first;
  for (const char* f : {"model.bin", "model.gguf", "model.safetensors"}) {
    const fs::path logits = out / (std::string(f) + ".logits");
    const auto r = lowp_run({"eval", "--model", (out / f).string(), "--text", lowp::test::train_corpus().string(), "--ctx", "32",
                             "--logits-out", logits.string()});
    ASSERT_EQ(r.code, 0) << f << ": " << r.err;
    const std::string bytes = slurp(logits);
    ASSERT_GT(bytes.size(), 1000u);
    if (first.empty())
      first = bytes;
    else
      EXPECT_TRUE(bytes == first) << f << " gives other logits than model.bin";
  }
}

using lowp::test::expect_one_line_failure;

TEST(TrainRun, BadInputsFailWithOneLine) {
  const fs::path dir = run_dir("bad");
  const fs::path empty = dir / "empty.txt", shorty = dir / "short.txt";
  std::ofstream(empty).close();
  std::ofstream(shorty) << "far too short for a window";
  auto args = [&](const fs::path& c, const std::string& out) {
    return std::vector<std::string>{"train", "--corpus", c.string(), "--steps", "3", "--config", "tiny", "--out", (dir / out).string()};
  };
  expect_one_line_failure(lowp_run(args(empty, "o1")), "is empty");
  expect_one_line_failure(lowp_run(args(shorty, "o2")), "must each hold one window");
  expect_one_line_failure(lowp_run(with(args(lowp::test::train_corpus(), "o3"), {"--recipe", "fp7"})), "fp7");
  expect_one_line_failure(lowp_run({"train", "--resume", (dir / "nothing").string(), "--steps", "3"}), "train.cfg");
  // train.cfg is read by the recipes' key = value reader: a line without '=' is named with its file and line.
  fs::create_directories(dir / "mangled");
  std::ofstream(dir / "mangled" / "train.cfg") << "corpus = " << lowp::test::train_corpus().string() << "\nrecipe fp32\n";
  expect_one_line_failure(lowp_run({"train", "--resume", (dir / "mangled").string(), "--steps", "3"}),
                          (dir / "mangled" / "train.cfg").string() + " line 2 'recipe fp32': expected `key = value`");
  // A learning rate of 1e30 blows the weights up after the first update.
  const fs::path out = dir / "o4";
  auto blow_up = base_args(out);
  blow_up[std::find(blow_up.begin(), blow_up.end(), "--lr") - blow_up.begin() + 1] = "1e30";
  const auto r = lowp_run(with(blow_up, {"--steps", "10", "--save-every", "1"}));
  expect_one_line_failure(r, "step 2: non-finite");
  EXPECT_NE(r.err.find("first non-finite tensor: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("last good checkpoint (step 1)"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out / "state.bin"));
  EXPECT_EQ(read_log(out).size(), 1u);
}

}  // namespace
