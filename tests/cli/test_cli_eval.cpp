// `lowp eval` and `lowp recipes`, run in-process through run_cli.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../accuracy/llama_reference.hpp"
#include "../accuracy/llama_test_util.hpp"
#include "../accuracy/model_files.hpp"
#include "cli/cli_run.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/quant/quantize.hpp"
#include "lowp/quant/scale_rules.hpp"

namespace {

using lowp::test::lowp_run;
using lowp::test::Result;

const std::string shared = LOWP_SHARED_DIR;

// The text after "<key>" and spaces on its output line.
std::string value_of(const std::string& out, const std::string& key) {
  const std::size_t at = out.find("\n" + key + " ");
  if (at == std::string::npos) return "nan";
  const std::size_t start = out.find_first_not_of(' ', at + 1 + key.size());
  return out.substr(start, out.find('\n', start) - start);
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A small random model written as a llama2.c file, and token files beside it.
class CliEval : public ::testing::Test {
 protected:
  void SetUp() override {
    lowp::accuracy::LlamaConfig c;
    c.dim = 32;
    c.hidden_dim = 64;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.vocab_size = 300;
    c.seq_len = 32;
    model_ = lowp::test::make_model(c, 9);
    dir_ = lowp::test::temp_dir("cli_eval");
    path_ = dir_ + "/m.bin";
    lowp::test::write_llama2c(path_, model_);
    lowp::test::write_text(dir_ + "/tokens.txt", "1\n17\n250\n3\n99\n4\n5\n120\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  lowp::accuracy::LlamaModel model_;
  std::string dir_, path_;
};

TEST_F(CliEval, PrintsTokensNllAndPplAndWritesLogits) {
  const Result r = lowp_run({"eval", "--model", path_, "--tokens", dir_ + "/tokens.txt", "--score-all", "--logits-out",
                             dir_ + "/logits.bin"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // Expected NLL from the token-by-token reference forward.
  const std::vector<int> tokens = {1, 17, 250, 3, 99, 4, 5, 120};
  const auto logits = lowp::test::ReferenceLlama(model_).run(tokens);
  double nll = 0;
  for (std::size_t t = 0; t + 1 < tokens.size(); ++t) {
    double sum = 0;
    for (int j = 0; j < 300; ++j) sum += std::exp(static_cast<double>(logits[t * 300 + j]));
    nll += std::log(sum) - logits[t * 300 + static_cast<std::size_t>(tokens[t + 1])];
  }
  nll /= 7;
  ASSERT_NE(r.out.find("\ntokens    8\nscored    7 (every position)\nmean NLL  "), std::string::npos) << r.out;
  EXPECT_NEAR(std::stod(value_of(r.out, "mean NLL")), nll, 2e-6);
  EXPECT_NEAR(std::stod(value_of(r.out, "PPL")), std::exp(nll), 1e-3 * std::exp(nll));

  const auto written = read_bytes(dir_ + "/logits.bin");
  ASSERT_EQ(written.size(), 8u * 300u * 4u);
  float worst = 0;
  for (std::size_t i = 0; i < 8 * 300; ++i) {
    float v;
    std::memcpy(&v, written.data() + 4 * i, 4);
    worst = std::max(worst, std::abs(v - logits[i]));
  }
  EXPECT_LE(worst, 1e-5f);
}

TEST_F(CliEval, RecipeAndLayers) {
  const Result r = lowp_run({"eval", "--model", path_, "--tokens", dir_ + "/tokens.txt", "--recipe", "kv4", "--layers"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("recipe    kv4\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scored    3 (second half of each window)"), std::string::npos) << r.out;
  // The per-layer table: "<layer> <point> <SQNR dB> <nonfinite>".
  std::istringstream lines(r.out);
  bool found = false;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string layer, point;
    double sqnr = 0;
    std::size_t nonfinite = 1;
    if (f >> layer >> point >> sqnr >> nonfinite && layer == "1" && point == "kv.v")
      found = sqnr > 5 && sqnr < 40 && nonfinite == 0;  // int4: ~6 dB per bit, some outliers
  }
  EXPECT_TRUE(found) << r.out;
}

// `eval --recipe R` prints the fp32 reference's PPL, ln(PPL/PPL_ref), mean KLD and same-top-1:
// checked against the same statistics computed here, in double, from the reference forward's
// logits and the logits lowp wrote for R.
TEST_F(CliEval, RecipeIsComparedWithTheFp32Reference) {
  const Result r = lowp_run({"eval", "--model", path_, "--tokens", dir_ + "/tokens.txt", "--recipe", "mxfp4",
                             "--score-all", "--logits-out", dir_ + "/q.bin"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<int> tokens = {1, 17, 250, 3, 99, 4, 5, 120};
  const auto ref = lowp::test::ReferenceLlama(model_).run(tokens);
  const auto bytes = read_bytes(dir_ + "/q.bin");
  ASSERT_EQ(bytes.size(), 8u * 300u * 4u);
  std::vector<float> q(8 * 300);
  std::memcpy(q.data(), bytes.data(), bytes.size());
  const auto log_softmax = [](const float* row) {
    double mx = row[0];
    for (int j = 1; j < 300; ++j) mx = std::max(mx, static_cast<double>(row[j]));
    double sum = 0;
    for (int j = 0; j < 300; ++j) sum += std::exp(row[j] - mx);
    std::vector<double> l(300);
    for (int j = 0; j < 300; ++j) l[j] = row[j] - mx - std::log(sum);
    return l;
  };
  double nll_ref = 0, ln_ratio = 0, kld = 0, same = 0;
  for (std::size_t t = 0; t < 7; ++t) {
    const auto lr = log_softmax(&ref[t * 300]), lq = log_softmax(&q[t * 300]);
    const auto target = static_cast<std::size_t>(tokens[t + 1]);
    nll_ref += -lr[target];
    ln_ratio += lr[target] - lq[target];
    for (int j = 0; j < 300; ++j) kld += std::exp(lr[j]) * (lr[j] - lq[j]);
    same += std::max_element(lr.begin(), lr.end()) - lr.begin() == std::max_element(lq.begin(), lq.end()) - lq.begin();
  }
  EXPECT_NEAR(std::stod(value_of(r.out, "PPL_ref")), std::exp(nll_ref / 7), 1e-5 * std::exp(nll_ref / 7));
  EXPECT_NEAR(std::stod(value_of(r.out, "ln(PPL/PPL_ref)")), ln_ratio / 7, 1e-5);
  EXPECT_GT(kld / 7, 1e-3);  // mxfp4 moves this model's outputs: the comparison is not trivially 0
  EXPECT_NEAR(std::stod(value_of(r.out, "mean KLD")), kld / 7, 1e-5);
  EXPECT_NEAR(std::stod(value_of(r.out, "same top1")), 100.0 * same / 7, 0.01);
  EXPECT_NE(r.out.find("PPL_ref   "), std::string::npos) << r.out;
  // The reference itself is not compared with itself.
  const Result f = lowp_run({"eval", "--model", path_, "--tokens", dir_ + "/tokens.txt"});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out.find("PPL_ref"), std::string::npos) << f.out;
}

TEST_F(CliEval, BadInputIsOneLine) {
  const auto one_line = [](const Result& r, int code, const std::string& start) {
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_EQ(r.err.find(start), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  const std::string tokens = dir_ + "/tokens.txt";
  one_line(lowp_run({"eval", "--model", path_, "--tokens", tokens, "--recipe", "fp7"}), 2,
           "lowp eval: unknown recipe 'fp7'");
  one_line(lowp_run({"eval", "--model", path_, "--tokens", tokens, "--ctx", "1"}), 2, "lowp eval: --ctx 1 is outside [2, 1048576]");
  // Past the model's seq_len (32): one warning line, and the evaluation runs.
  const Result longer = lowp_run({"eval", "--model", path_, "--tokens", tokens, "--ctx", "33"});
  EXPECT_EQ(longer.code, 0) << longer.err;
  EXPECT_EQ(longer.err, "lowp: warning: --ctx 33 is beyond the model's context length 32 (from its metadata); positions "
                        "past it are extrapolated\n");
  EXPECT_NE(longer.out.find("PPL"), std::string::npos);
  one_line(lowp_run({"eval", "--model", path_}), 2, "lowp eval: exactly one of --text and --tokens is required");
  lowp::test::write_text(dir_ + "/big.txt", "1\n300\n");
  one_line(lowp_run({"eval", "--model", path_, "--tokens", dir_ + "/big.txt"}), 1, "lowp eval: ");
  lowp::test::write_text(dir_ + "/empty.txt", "");
  one_line(lowp_run({"eval", "--model", path_, "--tokens", dir_ + "/empty.txt"}), 1, "lowp eval: ");
  one_line(lowp_run({"eval", "--model", dir_ + "/missing.bin", "--tokens", tokens}), 1, "lowp eval: ");
  // No tokenizer.bin beside the model and a vocabulary of 300 is not byte-level (256 + at
  // most 16 specials): --text is refused rather than fed wrong ids.
  lowp::test::write_text(dir_ + "/t.txt", "hi");
  one_line(lowp_run({"eval", "--model", path_, "--text", dir_ + "/t.txt"}), 1, "lowp eval: ");
  EXPECT_NE(lowp_run({"eval", "--model", path_, "--text", dir_ + "/t.txt"}).err.find("--tokens"), std::string::npos);
}

// A static-scale recipe (docs/recipes.md, "Static scales") without --calib: one line naming the
// key and the option, exit 2, in every command that evaluates.
TEST_F(CliEval, StaticScalesWithoutCalibIsOneUsageLine) {
  lowp::test::write_text(dir_ + "/static.txt", "name = s\nlinear = fp8-tensorwise\nact.scale = static\n");
  const std::string tokens = dir_ + "/tokens.txt", recipe = dir_ + "/static.txt";
  for (const char* cmd : {"eval", "sweep"}) {
    const Result r = lowp_run({cmd, "--model", path_, "--tokens", tokens, cmd == std::string("eval") ? "--recipe" : "--recipes", recipe});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err, "lowp " + std::string(cmd) + ": recipe 's' has act.scale = static:amax: give the calibration text with "
                     "--calib FILE (the scales are cached per text)\n");
  }
}

// `lowp generate` with static scales: refused without --calib, and with it calibrated once into
// --calib-cache, then decoded through the KV cache (the same text from the cache).
TEST(CliGenerateShared, StaticScalesFromCalibText) {
  const std::string model = shared + "/models/tinyllamas/stories260K.bin";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent";
  const std::string dir = lowp::test::temp_dir("cli_static");
  lowp::test::write_text(dir + "/r.txt", "name = s\nlinear = fp8-tensorwise\nact.scale = static\n");
  lowp::test::write_text(dir + "/calib.txt", "Once upon a time, there was a little dog named Max. Max liked to run.");
  const std::vector<std::string> base = {"generate", "--model", model, "--recipe", dir + "/r.txt", "--max-tokens", "12"};
  const Result refused = lowp_run(base);
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("act.scale = static:amax: give the calibration text with --calib FILE"), std::string::npos);
  std::vector<std::string> with = base;
  with.insert(with.end(), {"--calib", dir + "/calib.txt", "--calib-cache", dir + "/cache"});
  const Result first = lowp_run(with), second = lowp_run(with);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(second.out, first.out);
  EXPECT_GT(first.out.size(), 12u);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/cache")) files += e.path().extension() == ".lowpcal";
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

// Calibration text that overlaps the evaluation text: eval and sweep warn in one line, the same
// words in both, and evaluate.
TEST(CliEvalShared, CalibrationOverlapWarnsInEvalAndSweep) {
  const std::string model = shared + "/models/tinyllamas/stories260K.bin";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent";
  const std::string dir = lowp::test::temp_dir("cli_overlap");
  lowp::test::write_text(dir + "/r.txt", "name = s\nlinear = fp8-tensorwise\nact.scale = static\n");
  lowp::test::write_text(dir + "/t.txt", "Once upon a time, there was a little dog named Max. Max liked to run and play.");
  for (const char* cmd : {"eval", "sweep"}) {
    const Result r = lowp_run({cmd, "--model", model, "--text", dir + "/t.txt", "--ctx", "16",
                               cmd == std::string("eval") ? "--recipe" : "--recipes", dir + "/r.txt", "--calib",
                               dir + "/t.txt", "--calib-cache", dir + "/cache"});
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.err;
    const std::size_t at = r.err.find("warning: the calibration text overlaps the evaluation text (");
    ASSERT_NE(at, std::string::npos) << cmd << ": " << r.err;
    const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
    EXPECT_NE(line.find(" consecutive tokens in common from evaluation token 0): the KLD is not measured on held-out text"),
              std::string::npos)
        << cmd << ": " << line;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliEvalShared, Stories260K) {
  if (!std::filesystem::exists(shared + "/models/stories260K.bin"))
    GTEST_SKIP() << "../shared/models/stories260K.bin is absent";
  const Result r = lowp_run({"eval", "--model", shared + "/models/stories260K.bin", "--tokens",
                             shared + "/data/stories260K_ref/seqA_tokens.txt", "--score-all"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tokens    256\nscored    255 (every position)\nmean NLL  2.51654"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PPL       12.38"), std::string::npos) << r.out;
}

TEST(CliRecipes, ListsRecipesAndPresets) {
  const Result r = lowp_run({"recipes"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"* fp8-attn-hadamard ", "  fp32 ", "* kv4-hadamard ", "\nLinear presets", "  switchback-int8 "})
    EXPECT_NE(r.out.find(line), std::string::npos) << line;
  const Result s = lowp_run({"recipes", "--show", "kv4-hadamard"});
  EXPECT_EQ(s.out,
            "name = kv4-hadamard\nnote = kv4 with K and V Hadamard-rotated over head_dim before the cache (QuaRot's KV)\n"
            "kv = int4:tensor:int:nearest:sat\nkv.group = head\nattn.rotate = hadamard\nattn.rotate_v = on\n");
  const Result bad = lowp_run({"recipes", "--show", "nope"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err.find("lowp recipes: unknown recipe 'nope'"), 0u) << bad.err;
}

// The RCEIL recipes: in the default sweep; the floor rule clips the top of a block and RCEIL does
// not, on a block whose amax is 500 (E4M3, largest 448) or 7.9 (E2M3 7.5, E2M1 6):
//   floor: scale 2^(floor(log2 amax) - emax) = 1, so amax saturates to the largest value;
//   RCEIL: scale 2 (2 x largest >= amax), amax / 2 = 250 -> 256 (E4M3 step 16), 3.95 -> 4
//   (E2M3 step 0.25, E2M1's 4), so amax reads back as 512 or 8.
TEST(CliRecipes, RceilRecipesDoNotClipWhereTheFloorOnesDo) {
  const Result r = lowp_run({"recipes"});
  ASSERT_EQ(r.code, 0) << r.err;
  struct Case {
    const char* rceil;
    const char* floor;
    float amax, floor_back, rceil_back;
  };
  for (const Case c : {Case{"mxfp8-rceil", "mxfp8", 500, 448, 512}, Case{"mxfp6-rceil", "mxfp6", 7.9f, 7.5f, 8},
                       Case{"mxfp4-rceil", "mxfp4", 7.9f, 6, 8}}) {
    EXPECT_NE(r.out.find(std::string("\n* ") + c.rceil + " "), std::string::npos) << c.rceil;
    EXPECT_NE(r.out.find(std::string("\n* ") + c.floor + " "), std::string::npos) << c.floor;
    const lowp::accuracy::Recipe rc = lowp::accuracy::find_recipe(c.rceil);
    EXPECT_TRUE(rc.pad);
    for (std::size_t k = 0; k < rc.weights.size(); ++k) {
      if (k == lowp::accuracy::linear_kind_count - 1) break;  // the classifier stays float32
      ASSERT_TRUE(rc.weights[k] && rc.act[k]) << c.rceil << " " << k;
      for (const auto* spec : {&*rc.weights[k], &*rc.act[k]}) {
        std::vector<float> block(32, 0.25f);
        block[7] = c.amax;
        lowp::quant::fake_quant(*spec, block.data(), 1, 32);
        EXPECT_EQ(block[7], c.rceil_back) << c.rceil;
      }
    }
    std::vector<float> block(32, 0.25f);
    block[7] = c.amax;
    lowp::quant::fake_quant(lowp::quant::parse_quant_spec(c.floor), block.data(), 1, 32);
    EXPECT_EQ(block[7], c.floor_back) << c.floor;
  }
}

// `lowp recipes` ends with the paragraph on floor and RCEIL scales that docs/recipes.md holds.
TEST(CliRecipes, ShowsTheMxScaleParagraphOfTheDocs) {
  const Result r = lowp_run({"recipes"});
  const std::size_t at = r.out.find("\nMX scales, floor or RCEIL.");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string paragraph = r.out.substr(at + 1);
  EXPECT_NE(paragraph.find("512"), std::string::npos);
  std::ifstream f(std::string(LOWP_SOURCE_DIR) + "/docs/recipes.md");
  const std::string docs((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(docs.find(paragraph), std::string::npos) << paragraph;
}

// `lowp recipes` lists each stack's scale rule; every name parses as a spec rule, and the
// table in docs/quantization.md has a row naming the same rule.
TEST(CliRecipes, ListsEachStacksScaleRuleAsTheDocsDo) {
  const Result r = lowp_run({"recipes"});
  std::ifstream f(std::string(LOWP_SOURCE_DIR) + "/docs/quantization.md");
  const std::string docs((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::size_t table = docs.find("| stack | rule | where its code is |");
  ASSERT_NE(table, std::string::npos);
  const std::string rows = docs.substr(table, docs.find("\n\n", table) - table);
  for (const auto& s : lowp::quant::stack_scale_rules()) {
    EXPECT_NE(r.out.find(std::string("  ") + std::string(s.stack) + " -> " + std::string(s.rule)), std::string::npos)
        << s.rule;
    EXPECT_EQ(lowp::quant::rule_name(lowp::quant::parse_quant_spec("e2m1:b16:" + std::string(s.rule)).rule), s.rule);
    EXPECT_NE(rows.find("| `" + std::string(s.rule) + "`"), std::string::npos) << s.rule;
  }
}

}  // namespace
