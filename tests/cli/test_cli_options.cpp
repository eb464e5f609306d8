// What a new user meets first (issue 9): every numeric option's range check and its one message,
// `lowp --version`, and the one format grammar shared by the error, the help and the README.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../accuracy/llama_test_util.hpp"
#include "../accuracy/model_files.hpp"
#include "cli/cli_run.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/error.hpp"

namespace {

using lowp::test::lowp_run;
using lowp::test::Result;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A tiny llama2.c model (seq_len 16) and a token file, for the options that need --model.
class CliOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    lowp::accuracy::LlamaConfig c;
    c.dim = 16;
    c.hidden_dim = 32;
    c.n_layers = 1;
    c.n_heads = 2;
    c.n_kv_heads = 2;
    c.vocab_size = 64;
    c.seq_len = 16;
    dir_ = lowp::test::temp_dir("cli_options");
    model_ = dir_ + "/m.bin";
    lowp::test::write_llama2c(model_, lowp::test::make_model(c, 3));
    tokens_ = dir_ + "/t.txt";
    lowp::test::write_text(tokens_, "1\n5\n9\n13\n2\n7\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Exit status 2 and exactly this one line on stderr, nothing on stdout.
  static void usage_error(const std::vector<std::string>& args, const std::string& line) {
    const Result r = lowp_run(args, "1\n");
    EXPECT_EQ(r.code, 2) << line;
    EXPECT_EQ(r.err, line + "\n");
    EXPECT_EQ(r.out, "") << line;
  }
  static void accepted(const std::vector<std::string>& args) {
    const Result r = lowp_run(args, "1\n");
    EXPECT_EQ(r.code, 0) << r.err;
  }

  std::string dir_, model_, tokens_;
};

TEST_F(CliOptions, CtxIsCheckedAgainstTheModelZeroIncluded) {
  for (const char* cmd : {"eval", "sweep"}) {
    const std::vector<std::string> base = {cmd, "--model", model_, "--tokens", tokens_, "--recipes", "bf16"};
    auto with = [&](std::vector<std::string> extra) {
      std::vector<std::string> a = base;
      if (std::string(cmd) == "eval") a[5] = "--recipe";
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };
    const std::string p = "lowp " + std::string(cmd) + ": ";
    // 0 is not "default" (the help does not say so): the same message as 1; past the model's
    // seq_len (16) only warns (issue 11), past lowp's cap is refused.
    for (const char* v : {"0", "1", "-3", "1048577"})
      usage_error(with({"--ctx", v}), p + "--ctx " + v + " is outside [2, 1048576]");
    usage_error(with({"--ctx", "99999999999"}), p + "--ctx 99999999999 is outside [-2147483648, 2147483647]");
    usage_error(with({"--ctx", "abc"}), p + "--ctx 'abc' is not a decimal integer");
    usage_error(with({"--ctx", "0x10"}), p + "--ctx '0x10' is not a decimal integer");
    accepted(with({"--ctx", "2"}));
    accepted(with({"--ctx", "16"}));
    // --threads: 0 means all (the help says so), up to lowp's cap.
    for (const char* v : {"-1", "1025"}) usage_error(with({"--threads", v}), p + "--threads " + v + " is outside [0, 1024]");
    accepted(with({"--threads", "0"}));
    accepted(with({"--threads", "1024"}));
  }
}

TEST_F(CliOptions, TensorSweepShapeAndSeed) {
  const std::vector<std::string> base = {"sweep", "--specs", "bf16", "--rotations", "none", "--distributions", "gaussian"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  for (const char* opt : {"--rows", "--cols"}) {
    // -1 is refused, not wrapped to 2^64 - 1.
    for (const char* v : {"0", "-1", "33554433", "18446744073709551616"})
      usage_error(with({opt, v}), std::string("lowp sweep: ") + opt + " " + v + " is outside [1, 33554432]");
    usage_error(with({opt, "4.5"}), std::string("lowp sweep: ") + opt + " '4.5' is not a decimal integer");
  }
  usage_error(with({"--seed", "-1"}), "lowp sweep: --seed -1 is outside [0, 18446744073709551615]");
  accepted(with({"--rows", "1", "--cols", "8", "--seed", "18446744073709551615"}));
  // Leading zeros are decimal (CLI11 alone would read 010 as octal 8): 10 rows, not 8.
  const Result r = lowp_run(with({"--rows", "010", "--cols", "8"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("10 x 8 values"), std::string::npos) << r.out;
}

TEST_F(CliOptions, CastSeed) {
  usage_error({"cast", "--to", "e4m3", "--round", "stochastic", "--seed", "-1"},
              "lowp cast: --seed -1 is outside [0, 18446744073709551615]");
  usage_error({"cast", "--to", "e4m3", "--seed", ""}, "lowp cast: --seed '' is not a decimal integer");
  accepted({"cast", "--to", "e4m3", "--round", "stochastic", "--seed", "18446744073709551615"});
}

TEST(CliVersion, VersionBuildTypeAndIsa) {
  // The version the project declares, read from its CMakeLists.txt.
  const std::string cmake = read_file(std::string(LOWP_SOURCE_DIR) + "/CMakeLists.txt");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cmake, m, std::regex(R"(project\(lowp VERSION ([0-9.]+))")));
  const Result r = lowp_run({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
  std::istringstream lines(r.out);
  std::string version, build, kernels;
  std::getline(lines, version);
  std::getline(lines, build);
  std::getline(lines, kernels);
  EXPECT_EQ(version, "lowp " + m[1].str());
  EXPECT_TRUE(build == "build type: Release" || build == "build type: Debug" || build == "build type: RelWithDebInfo" ||
              build == "build type: MinSizeRel" || build == "build type: none")
      << build;
  const std::string isa(lowp::isa_name(lowp::best_isa()));
  EXPECT_EQ(kernels.rfind("kernels: " + isa + " ", 0), 0u) << kernels;
  // AVX-512 dispatch needs the CPU to have it (checked here with the compiler's own probe).
  if (isa == "avx512") {
    EXPECT_TRUE(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"));
  }
  if (isa == "avx2") {
    EXPECT_TRUE(__builtin_cpu_supports("avx2"));
  }
  EXPECT_NE(lowp_run({"--help"}).out.find("--version"), std::string::npos);
}

TEST(CliFormatGrammar, OneTextInErrorHelpAndReadme) {
  const std::string g(lowp::format_grammar());
  const Result bad = lowp_run({"cast", "--to", "nope"}, "1\n");
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(bad.err.size() > g.size() && bad.err.compare(bad.err.size() - g.size() - 1, g.size(), g) == 0) << bad.err;
  for (const char* cmd : {"cast", "decode"}) {
    const Result help = lowp_run({cmd, "--help"});
    EXPECT_EQ(help.code, 0);
    EXPECT_NE(help.out.find(g), std::string::npos) << cmd;
    for (const char* part : {"fnuz:", "p3109:", "fnu:", "_nz (after fn or fin):", "_bBIAS:", "intN_sym:"})
      EXPECT_NE(help.out.find(part), std::string::npos) << cmd << " " << part;
  }
  EXPECT_NE(read_file(std::string(LOWP_SOURCE_DIR) + "/README.md").find("`" + g + "`"), std::string::npos);
  // Every form the grammar names parses, and to what it says.
  for (const char* name : {"e4m3", "ue4m3", "e4m3fn", "e5m2fnuz", "e3m2fin", "e8m0fnu", "e4m3p3109", "e3m4fn_nz", "e3m4fin_nz",
                           "e4m3_b10", "ue5m3fn_nz_b3", "e1m6", "int4", "int8_sym", "uint16", "int2"})
    EXPECT_NO_THROW(lowp::parse_format(name)) << name;
  EXPECT_EQ(lowp::parse_format("e4m3_b10").bias, 10);
  EXPECT_FALSE(lowp::parse_format("ue4m3").is_signed);
  for (const char* name : {"e9m2", "e4m24", "e0m3", "int17", "int1", "uint8_sym", "e4m3xyz", "e4m3_nz"})
    EXPECT_THROW(lowp::parse_format(name), lowp::Error) << name;
}

}  // namespace
