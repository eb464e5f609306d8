// `lowp train` under the training recipes (recipe/train_recipe.hpp) and the optimizer
// (optim/optimizer.hpp): every built-in recipe trains, the stochastic ones give the same bits
// at 1 and 2 threads, a recipe file's per-layer choices reach the linears, and resuming
// fp8-delayed (amax histories) and bf16-pure-sr (bf16 master weights, SR) is bitwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "recipe/train_recipe.hpp"
#include "train/train_files.hpp"
#include "train/trainer.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::accuracy::train::run_training;
using lowp::accuracy::train::TrainOptions;

fs::path recipes_dir(const std::string& name) { return lowp::test::train_temp_dir("test_train_recipes", name); }

using lowp::test::log_without_speed;
using lowp::test::slurp;


TrainOptions options(const fs::path& out, const std::string& recipe, int steps, int threads) {
  TrainOptions o;
  o.corpus = lowp::test::train_corpus().string();
  o.config = lowp::accuracy::train::named_config("tiny");
  o.config.seq_len = 32;
  o.batch = 4;
  o.lr = 3e-3;
  o.seed = 11;
  o.eval_every = 3;
  o.val_windows = 8;
  o.steps = steps;
  o.threads = threads;
  o.recipe = recipe;
  o.out = out.string();
  return o;
}

bool stochastic(const std::string& name) {
  return name == "bf16-pure-sr" || name == "nvfp4-train" || name == "quartet-fp4" || name == "quartet2-nvfp4";
}

TEST(TrainRecipes, EveryBuiltInTrainsWithFiniteLossAndStochasticOnesAreThreadDeterministic) {
  for (const auto& r : lowp::train::builtin_train_recipes()) {
    SCOPED_TRACE(r.name);
    const fs::path a = recipes_dir("all_" + r.name + "_1");
    TrainOptions o = options(a, r.name, 4, 1);
    if (r.name == "fp8-block128") o.config.dim = 128, o.config.hidden_dim = 384, o.config.n_kv_heads = 2;  // 128x128 tiles
    const auto res = run_training(o, false, nullptr);
    EXPECT_TRUE(std::isfinite(res.final_val_loss));
    const auto losses = lowp::test::train_losses(a);
    ASSERT_EQ(losses.size(), 4u);
    for (double l : losses) EXPECT_TRUE(std::isfinite(l) && l > 0 && l < 7);  // ln(258) = 5.55 at the start
    EXPECT_TRUE(fs::exists(a / "quant.csv"));
    if (!stochastic(r.name)) continue;
    const fs::path b = recipes_dir("all_" + r.name + "_2");
    o.out = b.string();
    o.threads = 2;
    run_training(o, false, nullptr);
    EXPECT_EQ(log_without_speed(a), log_without_speed(b));
    for (const char* f : {"state.bin", "model.bin", "quant.csv"}) EXPECT_TRUE(slurp(a / f) == slurp(b / f)) << f << " differs";
  }
}

TEST(TrainRecipes, QuantizedOperandsOfAllThreeGemmsAreLogged) {
  const fs::path a = recipes_dir("quantcsv");
  run_training(options(a, "mxfp8", 3, 2), false, nullptr);
  const std::string q = slurp(a / "quant.csv");
  EXPECT_EQ(q.rfind("step,layer,linear,gemm,operand,sqnr_db,saturated,flushed\n", 0), 0u) << q.substr(0, 80);
  // mxfp8's classifier runs bf16 (a QuantLinear too): its rows carry layer -1.
  for (const char* row : {"3,0,wq,fwd,X,", "3,0,wq,fwd,W,", "3,1,w_down,dgrad,dY,", "3,1,w_down,wgrad,X^T,",
                          "3,-1,classifier,fwd,W,", "3,-1,classifier,dgrad,dY,"})
    EXPECT_NE(q.find(row), std::string::npos) << row;
  // fp32 quantizes nothing: no operand rows.
  const fs::path b = recipes_dir("quantcsv32");
  run_training(options(b, "fp32", 3, 2), false, nullptr);
  EXPECT_EQ(slurp(b / "quant.csv"), "step,layer,linear,gemm,operand,sqnr_db,saturated,flushed\n");
}

// keep_last = 1 keeps the tiny config's layer 1 in `keep`: bitwise the run that lists layer.1
// explicitly, and not the run without it.
TEST(TrainRecipes, RecipeFilePerLayerChoicesReachTheLinears) {
  const fs::path dir = recipes_dir("files");
  const auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string kept = write("kept.txt", "name = mine\nlinear = fp8-rowwise\nkeep_last = 1\nkeep = fp32\n");
  const std::string listed = write("listed.txt", "name = mine\nlinear = fp8-rowwise\nlayer.1 = fp32\n");
  const std::string plain = write("plain.txt", "name = mine\nlinear = fp8-rowwise\n");
  run_training(options(dir / "kept", kept, 4, 2), false, nullptr);
  run_training(options(dir / "listed", listed, 4, 2), false, nullptr);
  run_training(options(dir / "plain", plain, 4, 2), false, nullptr);
  EXPECT_TRUE(slurp(dir / "kept" / "state.bin") == slurp(dir / "listed" / "state.bin"));
  EXPECT_EQ(log_without_speed(dir / "kept"), log_without_speed(dir / "listed"));
  EXPECT_FALSE(slurp(dir / "kept" / "state.bin") == slurp(dir / "plain" / "state.bin"));
  // Layer 1 in fp32 logs no quantized operands; layer 0 does.
  const std::string q = slurp(dir / "kept" / "quant.csv");
  EXPECT_NE(q.find(",0,wq,fwd,X,"), std::string::npos);
  EXPECT_EQ(q.find(",1,wq,"), std::string::npos);
}

TEST(TrainRecipes, ResumeIsBitwiseForDelayedScalingAndBf16MasterWeightsWithSR) {
  for (const std::string recipe : {"fp8-delayed", "bf16-pure-sr"}) {
    SCOPED_TRACE(recipe);
    const fs::path full = recipes_dir("full_" + recipe), cut = recipes_dir("cut_" + recipe);
    TrainOptions o = options(full, recipe, 10, 2);
    o.save_every = 4;
    run_training(o, false, nullptr);
    o.out = cut.string();
    struct Killed {};
    EXPECT_THROW(run_training(o, false,
                              [](const auto& s) {
                                if (s.step == 6) throw Killed{};
                              }),
                 Killed);
    TrainOptions r;
    r.out = cut.string();
    r.steps = 10;
    r.threads = 1;
    run_training(r, true, nullptr);
    EXPECT_EQ(log_without_speed(full), log_without_speed(cut));
    for (const char* f : {"state.bin", "model.bin", "quant.csv"}) EXPECT_TRUE(slurp(full / f) == slurp(cut / f)) << f << " differs";
  }
}

// The bf16 stall on the real loop: at a learning rate whose Adam steps (~lr) sit below half a
// bf16 ulp of most weights, round-to-nearest bf16 master weights barely move, stochastic
// rounding follows fp32 on average.
TEST(TrainRecipes, Bf16PureStallsWhereStochasticRoundingKeepsUpWithFp32) {
  std::map<std::string, double> val;
  for (const std::string recipe : {"fp32", "bf16-pure", "bf16-pure-sr"}) {
    TrainOptions o = options(recipes_dir("stall_" + recipe), recipe, 30, 2);
    o.lr = 3e-5;
    o.eval_every = 30;
    val[recipe] = run_training(o, false, nullptr).final_val_loss;
  }
  const double gap_pure = val["bf16-pure"] - val["fp32"], gap_sr = std::abs(val["bf16-pure-sr"] - val["fp32"]);
  std::printf("val loss after 30 steps at lr 3e-5: fp32 %.5f, bf16-pure %.5f, bf16-pure-sr %.5f\n", val["fp32"],
              val["bf16-pure"], val["bf16-pure-sr"]);
  EXPECT_GT(gap_pure, 0.03);
  EXPECT_LT(gap_sr, gap_pure / 5);
}

TEST(TrainRecipes, UnknownRecipeNamesTheBuiltIns) {
  const fs::path d = recipes_dir("unknown");
  try {
    run_training(options(d, "fp7", 2, 1), false, nullptr);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("fp7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("quartet2-nvfp4"), std::string::npos) << e.what();
  }
}

}  // namespace
