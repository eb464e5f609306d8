// One recipe language across the commands (issue 28), in-process on lowp's own byte-level model
// (--model shakespeare): a file `lowp search` writes evaluates and trains unchanged (lowp.torch
// converts it: tests/python/test_one_language.py); usage errors exit 2 in every command; the
// small surprises (tensor sweep threads, generate's cut, a missing recipe file) say what they do.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_run.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "train/train_files.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::test::lowp_run;
using lowp::test::Result;
using lowp::test::slurp;

fs::path temp_dir() {
  return lowp::test::train_temp_dir("cli_one_language", testing::UnitTest::GetInstance()->current_test_info()->name());
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// Calibration and evaluation texts: two parts of the training tests' corpus.
std::string corpus_part(std::size_t part) { return slurp(lowp::test::train_corpus()).substr(part * 300, 300); }

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

void expect_usage(const Result& r, const std::string& command, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("lowp " + command + ": ", 0), 0u) << r.err;
  for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << p << " in " << r.err;
}

TEST(CliOneLanguage, ASearchFileEvaluatesAndTrainsUnchanged) {
  const fs::path d = temp_dir();
  write(d / "calib.txt", corpus_part(0));
  write(d / "eval.txt", corpus_part(1));
  const Result s = lowp_run({"search", "--model", "shakespeare", "--text", (d / "calib.txt").string(), "--menu",
                             "int4:row:int,mxfp4:pad", "--budget", "5", "--out", (d / "r.txt").string(), "--ctx", "64",
                             "--threads", "1"});
  ASSERT_EQ(s.code, 0) << s.err;
  std::string recipe = slurp(d / "r.txt");
  ASSERT_NE(recipe.find("layer.0.weights.wq = "), std::string::npos) << recipe;
  ASSERT_NE(recipe.find("weights.classifier = "), std::string::npos) << recipe;
  // A training key in the same file: evaluation names it and goes on.
  write(d / "r.txt", recipe + "optimizer = adamw\n");
  const Result e = lowp_run({"eval", "--model", "shakespeare", "--text", (d / "eval.txt").string(), "--recipe",
                             (d / "r.txt").string(), "--ctx", "64", "--threads", "1"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.err.find("lowp eval: note: recipe '"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("optimizer does not apply to eval"), std::string::npos) << e.err;
  EXPECT_EQ(lines(e.err), 1u) << e.err;
  // Training takes the file as it is: the searched weight specs become the forward's W.
  const std::string model = lowp::accuracy::resolve_model_path("shakespeare");
  const auto train = [&](const std::string& recipe_arg, const std::string& out) {
    return lowp_run({"train", "--init", model, "--corpus", lowp::test::train_corpus().string(), "--steps", "2", "--batch", "1",
                     "--ctx", "32", "--eval-every", "2", "--threads", "1", "--recipe", recipe_arg, "--out",
                     (d / out).string()});
  };
  const Result t = train((d / "r.txt").string(), "trained");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(t.err.find("unknown key"), std::string::npos) << t.err;
  const std::string q = slurp(d / "trained" / "quant.csv");
  EXPECT_NE(q.find(",0,wq,fwd,W,"), std::string::npos) << q.substr(0, 400);      // quantized: the file's weights
  EXPECT_EQ(q.find(",0,wq,dgrad,"), std::string::npos) << q.substr(0, 400);      // the backward: float32
  EXPECT_NE(q.find(",-1,classifier,fwd,W,"), std::string::npos) << q.substr(0, 400);
  // Attention keys in a file do not apply to training: one note, and training goes on.
  write(d / "kv.txt", "name = kv\nkv = int4:int\nkv.group = head\nweights = int8:row:int\n");
  const Result k = train((d / "kv.txt").string(), "kv");
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_NE(k.err.find("lowp train: note: recipe 'kv': kv, kv.group do not apply to train"), std::string::npos) << k.err;
  fs::remove_all(d);
}

TEST(CliOneLanguage, UsageErrorsExitTwoInEveryCommand) {
  const fs::path d = temp_dir();
  write(d / "eval.txt", corpus_part(1));
  write(d / "dup.txt", "name = dup\nlinear = bf16\nlinear = fp8-rowwise\n");
  const auto train = [&](const std::string& recipe) {
    return lowp_run({"train", "--corpus", lowp::test::train_corpus().string(), "--steps", "1", "--config", "tiny", "--recipe",
                     recipe, "--out", (d / "out").string()});
  };
  expect_usage(train("nope"), "train", {"unknown train recipe 'nope'"});
  expect_usage(train((d / "dup.txt").string()), "train", {"line 3", "key 'linear' is already set on line 2"});
  expect_usage(train((d / "missing.txt").string()), "train", {"file '" + (d / "missing.txt").string() + "' does not exist"});
  EXPECT_FALSE(fs::exists(d / "out"));
  const auto eval = [&](const std::string& recipe) {
    return lowp_run({"eval", "--model", "shakespeare", "--text", (d / "eval.txt").string(), "--recipe", recipe});
  };
  expect_usage(eval("nope"), "eval", {"unknown recipe 'nope'"});
  expect_usage(eval((d / "dup.txt").string()), "eval", {"line 3", "already set on line 2"});
  expect_usage(eval((d / "missing.txt").string()), "eval", {"recipe file '" + (d / "missing.txt").string() + "' does not exist"});
  expect_usage(eval("quartet-fp4"), "eval", {"'quartet-fp4' is a training recipe"});
  expect_usage(lowp_run({"generate", "--model", "shakespeare", "--recipe", "missing.recipe"}), "generate",
               {"'missing.recipe' does not exist"});
  expect_usage(lowp_run({"sweep", "--model", "shakespeare", "--text", (d / "eval.txt").string(), "--recipes",
                         "bf16,nope"}),
               "sweep", {"unknown recipe 'nope'"});
  fs::remove_all(d);
}

TEST(CliOneLanguage, TensorSweepTakesThreadsWithTheSameResult) {
  const auto run = [](const char* threads) {
    return lowp_run({"sweep", "--tensors", "--specs", "mxfp4,e4m3:row", "--distributions", "gaussian", "--rows", "64",
                     "--cols", "256", "--threads", threads});
  };
  const Result one = run("1"), two = run("2");
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(one.out, two.out);
  EXPECT_NE(one.out.find("mxfp4"), std::string::npos) << one.out;
}

TEST(CliOneLanguage, GenerateSaysWhenTheContextCutsMaxTokens) {
  const Result cut = lowp_run({"generate", "--model", "shakespeare", "--prompt", "ROMEO:", "--max-tokens", "100000",
                               "--threads", "1"});
  ASSERT_EQ(cut.code, 0) << cut.err;
  EXPECT_NE(cut.err.find("lowp generate: note: --max-tokens 100000 is cut to "), std::string::npos) << cut.err;
  EXPECT_NE(cut.err.find("by the model's context (seq_len "), std::string::npos) << cut.err;
  const Result fits = lowp_run({"generate", "--model", "shakespeare", "--prompt", "ROMEO:", "--max-tokens", "5",
                                "--threads", "1"});
  ASSERT_EQ(fits.code, 0) << fits.err;
  EXPECT_EQ(fits.err, "");
}

TEST(CliOneLanguage, RecipesShowsWhatEachNameDoesToEveryPart) {
  const Result r = lowp_run({"recipes"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::size_t at = r.out.find("What each name does");
  ASSERT_NE(at, std::string::npos);
  const std::string table = r.out.substr(at);
  for (const char* part : {"\nmxfp8 (evaluation, training, linear preset)\n    fwd        X=float8_e4m3fn:b32:mx",
                           "\nmxfp8-te (evaluation, training, linear preset)\n    fwd        X=float8_e4m3fn:b32:rceil",
                           "\nkv4 (evaluation, training)\n", "    KV cache   int4:tensor:int:nearest:sat, one scale per head and token",
                           "\nquartet-fp4 (training only, linear preset)\n", "    dgrad      dY=", "    attention  Q=",
                           "\nscalify (training only)\n"})
    EXPECT_NE(table.find(part), std::string::npos) << part;
  // Training-only names print their own text.
  const Result show = lowp_run({"recipes", "--show", "bf16-pure"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("master = bf16"), std::string::npos) << show.out;
}

}  // namespace
