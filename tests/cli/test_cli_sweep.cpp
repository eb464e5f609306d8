// `lowp sweep` in-process: the tensor sweep with its files, the model sweep on the shared
// checkpoint, and the one-line errors with their exit codes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.hpp"

namespace {

namespace fs = std::filesystem;

using lowp::test::lowp_run;
using lowp::test::Result;

// A fresh directory for one test (CTest runs tests in parallel).
fs::path temp_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  const fs::path d = fs::temp_directory_path() / ("lowp_cli_sweep_" + std::to_string(getpid()) + "_" + info->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::size_t count_lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

void expect_one_line(const Result& r, int code, const std::string& prefix) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_TRUE(r.err.starts_with(prefix)) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
}

TEST(CliSweep, TensorSweepWritesTableCsvJsonAndSvg) {
  const fs::path d = temp_dir();
  const Result r = lowp_run({"sweep", "--rows", "8", "--cols", "256", "--specs", "e4m3:row,mxfp4,nvfp4",
                             "--distributions", "gaussian,llm_activations", "--csv", (d / "t.csv").string(),
                             "--json", (d / "t.json").string(), "--plot", (d / "t.svg").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("8 x 256 values per distribution"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nllm_activations\n"), std::string::npos);
  EXPECT_NE(r.out.find("\nnvfp4 "), std::string::npos);
  EXPECT_EQ(r.out.find("laplace"), std::string::npos);
  EXPECT_EQ(count_lines(read(d / "t.csv")), 1u + 2 * 3 * 3);  // header + dists x specs x rotations
  EXPECT_NE(read(d / "t.json").find("\"distribution\": \"llm_activations\""), std::string::npos);
  const std::string svg = read(d / "t.svg");
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")) << svg.substr(0, 80);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  fs::remove_all(d);
}

// Without --model (or --tensors) the sweep runs lowp's own model on its held-out Shakespeare.
TEST(CliSweep, DefaultIsTheModelSweepOfTheShakespeareModel) {
  const Result r = lowp_run({"sweep", "--recipes", "bf16", "--threads", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("shakespeare"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8192 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nbf16 "), std::string::npos) << r.out;
}

TEST(CliSweep, TensorSweepUsageErrors) {
  expect_one_line(lowp_run({"sweep", "--specs", "e4m3,nope"}), 2, "lowp sweep: quantization spec 'nope'");
  expect_one_line(lowp_run({"sweep", "--distributions", "cauchy"}), 2, "lowp sweep: unknown distribution 'cauchy'");
  expect_one_line(lowp_run({"sweep", "--rotations", "givens"}), 2, "lowp sweep: unknown rotation 'givens'");
  expect_one_line(lowp_run({"sweep", "--cols", "100", "--specs", "mxfp4"}), 2, "lowp sweep: ");
  expect_one_line(lowp_run({"sweep", "--rows", "0"}), 2, "lowp sweep: --rows 0 is outside [1, 33554432]");
  expect_one_line(lowp_run({"sweep", "--tensors", "--recipes", "bf16"}), 2, "lowp sweep: --text, --tokens, --recipes");
  expect_one_line(lowp_run({"sweep", "--rows", "x"}), 2, "lowp sweep: ");
  expect_one_line(lowp_run({"sweep", "--rows", "4", "--cols", "64", "--specs", "bf16", "--csv", "/nonexistent/dir/t.csv"}),
                  1, "lowp sweep: cannot open '/nonexistent/dir/t.csv' for writing");
}

// Output files go through a temporary beside them and a rename: a CSV already there is replaced
// whole, and a destination that cannot take the rename (a folder) is a one-line error that
// leaves the folder as it was and no temporary behind.
TEST(CliSweep, OutputFilesAreReplacedWholeOrNotAtAll) {
  const fs::path d = temp_dir();
  const std::string csv = (d / "t.csv").string();
  std::ofstream(csv) << "an old file, longer than nothing\n";
  const std::vector<std::string> sweep = {"sweep", "--rows", "4", "--cols", "64", "--specs", "bf16", "--distributions",
                                          "gaussian"};
  auto with = [&](std::vector<std::string> args, const std::string& flag, const std::string& path) {
    args.push_back(flag);
    args.push_back(path);
    return args;
  };
  const Result ok = lowp_run(with(sweep, "--csv", csv));
  ASSERT_EQ(ok.code, 0) << ok.err;
  const std::string text = read(csv);
  EXPECT_TRUE(text.starts_with("distribution,spec,")) << text;
  EXPECT_EQ(text.find("an old file"), std::string::npos);
  EXPECT_FALSE(fs::exists(csv + ".tmp"));

  const fs::path folder = d / "folder.json";
  fs::create_directories(folder / "inside");
  expect_one_line(lowp_run(with(sweep, "--json", folder.string())), 1,
                              "lowp sweep: cannot write '" + folder.string() + "'");
  EXPECT_TRUE(fs::is_directory(folder / "inside"));
  EXPECT_FALSE(fs::exists(folder.string() + ".tmp"));
  fs::remove_all(d);
}

const std::string kShared = LOWP_SHARED_DIR;
const std::string kModel = kShared + "/models/stories260K.bin";
const std::string kTokens = kShared + "/data/stories260K_ref/seqA_tokens.txt";

TEST(CliSweep, ModelSweepUsageAndDataErrors) {
  expect_one_line(lowp_run({"sweep", "--model", "m.bin"}), 2, "lowp sweep: --model needs exactly one of --text and --tokens");
  expect_one_line(lowp_run({"sweep", "--model", "m.bin", "--text", "a", "--tokens", "b"}), 2,
                  "lowp sweep: --model needs exactly one of");
  expect_one_line(lowp_run({"sweep", "--model", "m.bin", "--tokens", "t", "--specs", "bf16"}), 2,
                  "lowp sweep: --specs, --distributions and --rotations belong to the tensor sweep");
  expect_one_line(lowp_run({"sweep", "--model", "m.bin", "--tokens", "t", "--recipes", "bf16,no-such-recipe"}), 2,
                  "lowp sweep: ");
  expect_one_line(lowp_run({"sweep", "--model", "/nonexistent/m.bin", "--tokens", "t", "--recipes", "bf16"}), 1,
                  "lowp sweep: ");
}

TEST(CliSweep, ModelSweepOnTheSharedModel) {
  if (!fs::exists(kModel) || !fs::exists(kTokens)) GTEST_SKIP() << "../shared/models/stories260K.bin is absent";
  const fs::path d = temp_dir();
  // A recipe file whose block is wider than the model (dim 64): it fails, the others are reported.
  std::ofstream(d / "wide.recipe") << "name = wide-block\nweights = e4m3:b4096\n";
  const Result r = lowp_run({"sweep", "--model", kModel, "--tokens", kTokens, "--recipes",
                             "bf16,fp32," + (d / "wide.recipe").string() + ",fp8-tensorwise", "--csv",
                             (d / "m.csv").string(), "--json", (d / "m.json").string(), "--plot",
                             (d / "m.svg").string(), "--layers"});
  expect_one_line(r, 1, "lowp sweep: 1 of 4 recipes failed (wide-block: ");
  // Sorted by KLD: fp32 (exactly 0), then bf16, then fp8; the failure is listed after the table.
  const auto fp32 = r.out.find("\nfp32 "), bf16 = r.out.find("\nbf16 "), fp8 = r.out.find("\nfp8-tensorwise ");
  ASSERT_NE(fp32, std::string::npos) << r.out;
  EXPECT_LT(fp32, bf16);
  EXPECT_LT(bf16, fp8);
  EXPECT_NE(r.out.find("failed: wide-block: "), std::string::npos);
  EXPECT_NE(r.out.find("Per-layer error attribution"), std::string::npos);
  const std::string csv = read(d / "m.csv");
  EXPECT_EQ(count_lines(csv), 5u);
  EXPECT_NE(csv.find("\nfp32,"), std::string::npos);
  EXPECT_NE(read(d / "m.json").find("\"layers\": [{\"layer\": 0"), std::string::npos);
  EXPECT_TRUE(read(d / "m.svg").ends_with("</svg>\n"));
  fs::remove_all(d);
}

// docs/recipes.md's claim on the shared model: with the OCP floor scale mxfp8 ranks below mxfp6
// and fp8-tensorwise; with RCEIL scales it ranks above all three (lower mean KLD = better).
TEST(CliSweep, MxFloorScaleClipsOnTheSharedModel) {
  if (!fs::exists(kModel) || !fs::exists(kTokens)) GTEST_SKIP() << "../shared/models/stories260K.bin is absent";
  const fs::path d = temp_dir();
  const Result r = lowp_run({"sweep", "--model", kModel, "--tokens", kTokens, "--recipes",
                             "mxfp8,mxfp8-rceil,mxfp6,fp8-tensorwise", "--csv", (d / "m.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<std::string, double> kld;  // recipe -> kld_mean, the 6th CSV column
  std::istringstream csv(read(d / "m.csv"));
  std::string line;
  std::getline(csv, line);
  ASSERT_TRUE(line.starts_with("recipe,ppl,ppl_se,ln_ppl_ratio,ln_ppl_ratio_se,kld_mean,")) << line;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string c; std::getline(row, c, ',');) cells.push_back(c);
    ASSERT_GE(cells.size(), 6u) << line;
    kld[cells[0]] = std::stod(cells[5]);
  }
  ASSERT_EQ(kld.size(), 4u);
  EXPECT_GT(kld["mxfp8"], kld["mxfp6"]);
  EXPECT_GT(kld["mxfp8"], kld["fp8-tensorwise"]);
  EXPECT_LT(kld["mxfp8-rceil"], kld["mxfp6"]);
  EXPECT_LT(kld["mxfp8-rceil"], kld["fp8-tensorwise"]);
  fs::remove_all(d);
}

TEST(CliSweep, ModelSweepBadTokens) {
  if (!fs::exists(kModel)) GTEST_SKIP() << "../shared/models/stories260K.bin is absent";
  const fs::path d = temp_dir();
  std::ofstream(d / "big.txt") << "1\n2\n600\n";  // vocab 512
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--tokens", (d / "big.txt").string(), "--recipes", "bf16"}), 1,
                  "lowp sweep: ");
  std::ofstream(d / "empty.txt") << "";
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--tokens", (d / "empty.txt").string(), "--recipes", "bf16"}),
                  1, "lowp sweep: ");
  // --ctx below 2 is a usage error, as for `lowp eval` (past seq_len only warns).
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--tokens", kTokens, "--ctx", "1", "--recipes", "bf16"}), 2,
                  "lowp sweep: --ctx 1 is outside [2, 1048576]");
  fs::remove_all(d);
}

// --save-base-logits writes llama.cpp's --kl-divergence-base file; --base-logits reads it back
// as the reference: lowp's fp32 is ~0 from its own saved reference, bf16 as far as before.
TEST(CliSweep, BaseLogitsRoundTrip) {
  if (!fs::exists(kModel) || !fs::exists(kTokens)) GTEST_SKIP() << "../shared/models/stories260K.bin is absent";
  const fs::path d = temp_dir();
  const std::string base = (d / "base.kld").string();
  const Result w = lowp_run({"sweep", "--model", kModel, "--tokens", kTokens, "--ctx", "64", "--recipes", "bf16",
                             "--save-base-logits", base});
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_EQ(fs::file_size(base), 20u + 4u * 256 + 2u * 4 * 31 * (512 + 4));  // 4 windows of 64, vocab 512
  const Result r = lowp_run({"sweep", "--model", kModel, "--base-logits", base, "--recipes", "bf16,fp32", "--json",
                             (d / "m.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("llama.cpp base logits reference: PPL"), std::string::npos) << r.out;
  const auto fp32 = r.out.find("\nfp32 "), bf16 = r.out.find("\nbf16 ");
  ASSERT_NE(fp32, std::string::npos) << r.out;
  EXPECT_LT(fp32, bf16);
  EXPECT_NE(read(d / "m.json").find("\"recipe\": \"llama.cpp base logits\""), std::string::npos);

  expect_one_line(lowp_run({"sweep", "--model", kModel, "--base-logits", base, "--tokens", kTokens}), 2,
                  "lowp sweep: --base-logits brings its own tokens");
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--base-logits", base, "--score-all"}), 2,
                  "lowp sweep: base logits score the second half");
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--base-logits", base, "--ctx", "32"}), 2,
                  "lowp sweep: --ctx 32 differs from the base logits' n_ctx 64");
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--base-logits", base, "--save-base-logits", base}), 2,
                  "lowp sweep: --base-logits and --save-base-logits exclude each other");
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--base-logits", kTokens}), 1, "lowp sweep: ");
  // Without --model, the default model (shakespeare, a byte vocabulary) meets a 512-token file.
  expect_one_line(lowp_run({"sweep", "--base-logits", base}), 1, "lowp sweep: ");
  fs::remove_all(d);
}

}  // namespace
