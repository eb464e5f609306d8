// `lowp sweep` in-process: the tensor sweep with its files, the model sweep on the shared
// checkpoint, and the one-line errors with their exit codes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
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
  EXPECT_NE(r.out.find("8193 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nbf16 "), std::string::npos) << r.out;
}

TEST(CliSweep, TensorSweepUsageErrors) {
  expect_one_line(lowp_run({"sweep", "--specs", "e4m3,nope"}), 2, "lowp sweep: quantization spec 'nope'");
  expect_one_line(lowp_run({"sweep", "--distributions", "cauchy"}), 2, "lowp sweep: unknown distribution 'cauchy'");
  expect_one_line(lowp_run({"sweep", "--rotations", "givens"}), 2, "lowp sweep: unknown rotation 'givens'");
  expect_one_line(lowp_run({"sweep", "--cols", "100", "--specs", "mxfp4"}), 2, "lowp sweep: ");
  expect_one_line(lowp_run({"sweep", "--rows", "0"}), 2, "lowp sweep: tensor sweep: empty shape 0 x 4096");
  expect_one_line(lowp_run({"sweep", "--tensors", "--recipes", "bf16"}), 2, "lowp sweep: --text, --tokens, --recipes");
  expect_one_line(lowp_run({"sweep", "--rows", "x"}), 2, "lowp sweep: ");
  expect_one_line(lowp_run({"sweep", "--rows", "4", "--cols", "64", "--specs", "bf16", "--csv", "/nonexistent/dir/t.csv"}),
                  1, "lowp sweep: cannot open '/nonexistent/dir/t.csv' for writing");
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

TEST(CliSweep, ModelSweepBadTokens) {
  if (!fs::exists(kModel)) GTEST_SKIP() << "../shared/models/stories260K.bin is absent";
  const fs::path d = temp_dir();
  std::ofstream(d / "big.txt") << "1\n2\n600\n";  // vocab 512
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--tokens", (d / "big.txt").string(), "--recipes", "bf16"}), 1,
                  "lowp sweep: ");
  std::ofstream(d / "empty.txt") << "";
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--tokens", (d / "empty.txt").string(), "--recipes", "bf16"}),
                  1, "lowp sweep: ");
  // --ctx beyond seq_len is a usage error, as for `lowp eval`.
  expect_one_line(lowp_run({"sweep", "--model", kModel, "--tokens", kTokens, "--ctx", "100000", "--recipes", "bf16"}), 2,
                  "lowp sweep: --ctx 100000 is outside [2, 512] (the model's seq_len)");
  fs::remove_all(d);
}

}  // namespace
