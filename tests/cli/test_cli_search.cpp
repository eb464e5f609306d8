// `lowp search` and `lowp sweep --sensitivity` in-process on lowp's own byte-level model
// (--model shakespeare): the one-line errors (unknown spec, budget below the cheapest menu
// choice, evaluation text that overlaps the calibration text), a small search end to end, and
// its CSV against its printed table and `lowp eval` of its recipe files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
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

fs::path temp_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  const fs::path d = fs::temp_directory_path() / ("lowp_cli_search_" + std::to_string(getpid()) + "_" + info->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string read(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

const std::string kCalib =
    "First Citizen: Before we proceed any further, hear me speak. All: Speak, speak. First Citizen: You are all "
    "resolved rather to die than to famish?\n";
const std::string kEval =
    "MENENIUS: Either you must confess yourselves wondrous malicious, or be accused of folly. I shall tell you a "
    "pretty tale.\n";

void expect_usage(const lowp::test::Result& r, const std::string& part) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("lowp search: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
}

TEST(CliSearch, BadInputIsOneLine) {
  const fs::path d = temp_dir();
  write(d / "calib.txt", kCalib);
  write(d / "eval.txt", kEval);
  write(d / "overlap.txt", kEval + kCalib.substr(10, 90));
  const std::vector<std::string> common = {"search", "--model", "shakespeare", "--text", (d / "calib.txt").string(),
                                           "--out", (d / "r.txt").string(), "--ctx", "64"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return lowp_run(a);
  };
  expect_usage(with({"--menu", "int4,nope", "--budget", "6"}), "nope");
  expect_usage(with({"--menu", "int4,int8", "--budget", "3"}), "below the cheapest menu choice");
  expect_usage(with({"--menu", "int4,int8", "--budget", "x"}), "not a positive number");
  expect_usage(with({"--menu", "int4,int8", "--budget", "6", "--eval", (d / "calib.txt").string()}),
               "calibration");
  expect_usage(with({"--menu", "int4,int8", "--budget", "6", "--eval", (d / "overlap.txt").string()}),
               "overlaps the calibration text");
  EXPECT_FALSE(fs::exists(d / "r.txt"));
  fs::remove_all(d);
}

TEST(CliSearch, WritesARecipeThatEvalReads) {
  const fs::path d = temp_dir();
  write(d / "calib.txt", kCalib);
  write(d / "eval.txt", kEval);
  const auto r = lowp_run({"search", "--model", "shakespeare", "--text", (d / "calib.txt").string(), "--menu",
                           "int4,int8", "--budget", "5,7", "--eval", (d / "eval.txt").string(), "--out",
                           (d / "r.txt").string(), "--plot", (d / "p.svg").string(), "--ctx", "64", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("predicted KLD"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("uniform int8"), std::string::npos) << r.out;
  const std::string recipe = read(d / "r-5.txt");
  EXPECT_NE(recipe.find("layer.0.weights.wq = "), std::string::npos) << recipe;
  EXPECT_TRUE(fs::exists(d / "r-7.txt"));
  EXPECT_NE(read(d / "p.svg").find("</svg>"), std::string::npos);
  const auto e = lowp_run({"eval", "--model", "shakespeare", "--text", (d / "eval.txt").string(), "--recipe",
                           (d / "r-5.txt").string(), "--ctx", "64", "--threads", "1"});
  EXPECT_EQ(e.code, 0) << e.err;
  fs::remove_all(d);
}

std::string printf1(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

// --csv: one row per line of the printed table, in its order, each number the exact double the
// table rounds (the table's own formats: %.4f bits, %.4e KLD, %.1e SE, %.5f d ln PPL). The
// searched rows name their recipe file, and `lowp eval` of that file on the same text measures
// the same KLD, SE and ln PPL ratio (eval prints 6 decimals: within 5e-7). The bits of the
// uniform per-tensor recipes are independent of the search: int8 and int4 differ by 4 bits on
// every weight with the same scale words, and int4:b32 is 4 + 32/32 = 5 exactly.
TEST(CliSearch, CsvHoldsTheTableRows) {
  const fs::path d = temp_dir();
  write(d / "calib.txt", kCalib);
  write(d / "eval.txt", kEval);
  const auto r = lowp_run({"search", "--model", "shakespeare", "--text", (d / "calib.txt").string(), "--menu",
                           "int4,int4:b32,int8", "--budget", "5,7", "--eval", (d / "eval.txt").string(), "--out",
                           (d / "r.txt").string(), "--csv", (d / "s.csv").string(), "--ctx", "64", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream csv(read(d / "s.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "recipe,kind,bits_per_weight,predicted_kld,kld_mean,kld_se,ln_ppl_ratio,file");
  std::vector<std::string> names;
  std::map<std::string, double> bits;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    if (line.back() == ',') f.push_back("");
    ASSERT_EQ(f.size(), 8u) << line;
    const std::string& name = f[0];
    names.push_back(name);
    const double bpw = std::stod(f[2]), predicted = std::stod(f[3]), kld = std::stod(f[4]), se = std::stod(f[5]),
                 dln = std::stod(f[6]);
    bits[name] = bpw;
    // The printed row: name, bits/w, predicted, measured, +-, measured/predicted, dln PPL.
    const std::size_t at = r.out.find("\n" + name + "  ");
    ASSERT_NE(at, std::string::npos) << name << "\n" << r.out;
    std::istringstream row(r.out.substr(at + 1 + name.size()));
    std::string t_bpw, t_pred, t_kld, t_se, t_ratio, t_dln;
    row >> t_bpw >> t_pred >> t_kld >> t_se >> t_ratio >> t_dln;
    EXPECT_EQ(t_bpw, printf1("%.4f", bpw)) << name;
    EXPECT_EQ(t_pred, printf1("%.4e", predicted)) << name;
    EXPECT_EQ(t_kld, printf1("%.4e", kld)) << name;
    EXPECT_EQ(t_se, printf1("%.1e", se)) << name;
    EXPECT_EQ(t_ratio, printf1("%.3f", kld / predicted)) << name;
    EXPECT_EQ(t_dln, printf1("%.5f", dln)) << name;
    if (name.rfind("search-", 0) == 0) {
      EXPECT_EQ(f[1], "searched");
      const fs::path file = d / ("r-" + name.substr(7) + ".txt");
      EXPECT_EQ(f[7], file.string());
      EXPECT_NE(read(file).find("name = " + name + "\n"), std::string::npos) << read(file);
      const auto e = lowp_run({"eval", "--model", "shakespeare", "--text", (d / "eval.txt").string(), "--recipe",
                               file.string(), "--ctx", "64", "--threads", "1"});
      ASSERT_EQ(e.code, 0) << e.err;
      double e_kld = 0, e_se = 0, e_dln = 0;
      std::string sep;
      std::istringstream(e.out.substr(e.out.find("mean KLD") + 8)) >> e_kld >> sep >> e_se;
      std::istringstream(e.out.substr(e.out.find("ln(PPL/PPL_ref)") + 15)) >> e_dln;
      EXPECT_NEAR(kld, e_kld, 5e-7) << name;
      EXPECT_NEAR(se, e_se, 5e-7) << name;
      EXPECT_NEAR(dln, e_dln, 5e-7) << name;
    } else {
      EXPECT_EQ(f[1], "uniform") << name;
      EXPECT_EQ(f[7], "") << name;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"search-5", "search-7", "uniform int4", "uniform int4:b32", "uniform int8"}));
  EXPECT_NEAR(bits["uniform int8"] - bits["uniform int4"], 4.0, 1e-12);
  EXPECT_EQ(bits["uniform int4:b32"], 5.0);
  fs::remove_all(d);
}

TEST(CliSearch, SweepSensitivityWritesItsFiles) {
  const fs::path d = temp_dir();
  write(d / "calib.txt", kCalib);
  const auto r = lowp_run({"sweep", "--model", "shakespeare", "--text", (d / "calib.txt").string(), "--sensitivity",
                           "int8", "--ctx", "64", "--threads", "1", "--csv", (d / "s.csv").string(), "--json",
                           (d / "s.json").string(), "--plot", (d / "s.svg").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = read(d / "s.csv");
  EXPECT_EQ(csv.rfind("layer,kind,tensor,spec,kld,dlnppl,", 0), 0u) << csv.substr(0, 200);
  EXPECT_NE(csv.find("\n0,weight,weights.wq,int8,"), std::string::npos);
  EXPECT_NE(csv.find("\n-1,weight,weights.classifier,int8,"), std::string::npos);
  EXPECT_NE(read(d / "s.json").find("\"rows\": ["), std::string::npos);
  EXPECT_NE(read(d / "s.svg").find("</svg>"), std::string::npos);
  const auto bad = lowp_run({"sweep", "--model", "shakespeare", "--text", (d / "calib.txt").string(), "--sensitivity",
                             "nope"});
  EXPECT_EQ(bad.code, 2);
  fs::remove_all(d);
}

}  // namespace

namespace {

std::string shared(const std::string& rel) { return std::string(LOWP_SHARED_DIR) + "/" + rel; }

template <class T>
std::vector<T> read_binary(const std::string& path) {
  const std::string b = read(path);
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

// Bits per weight of a GGUF over the linears and the classifier, from tensor_types.tsv and
// ggml's block layouts (bytes per block / elements per block), counted independently here.
double tsv_bits_per_weight(const std::string& file) {
  const std::map<std::string, std::pair<double, double>> blocks = {
      {"F32", {4, 1}},     {"F16", {2, 1}},      {"BF16", {2, 1}},     {"Q8_0", {34, 32}}, {"Q4_0", {18, 32}},
      {"Q4_1", {20, 32}},  {"Q5_0", {22, 32}},   {"Q5_1", {24, 32}},   {"Q2_K", {84, 256}}, {"Q3_K", {110, 256}},
      {"Q4_K", {144, 256}}, {"Q5_K", {176, 256}}, {"Q6_K", {210, 256}}, {"IQ4_NL", {18, 32}}, {"IQ4_XS", {136, 256}}};
  std::ifstream f(shared("gguf/tensor_types.tsv"));
  double bits = 0, n = 0;
  for (std::string line; std::getline(f, line);) {
    std::istringstream s(line);
    std::string name, tensor, type, ne;
    std::getline(s, name, '\t');
    std::getline(s, tensor, '\t');
    std::getline(s, type, '\t');
    std::getline(s, ne);
    if (name != file || tensor.find("norm") != std::string::npos || tensor == "token_embd.weight") continue;
    double elements = 1;
    for (char& c : ne)
      if (c == '[' || c == ']' || c == ',') c = ' ';
    std::istringstream dims(ne);
    for (double d; dims >> d;) elements *= d;
    const auto [bytes, per] = blocks.at(type);
    bits += elements / per * bytes * 8;
    n += elements;
  }
  return bits / n;
}

// --base-logits: llama.cpp's Q4_0 and Q6_K runs of model A as points. The bits per weight
// against the count above; the KLD against one computed here in double from llama.cpp's
// logits and the independent float64 forward of the F32 model. The tolerance, per position,
// from what lowp does differently:
//  - its float32 logits z + d lie within eps = 1e-4 of the float64 forward's z (GgmlDequant's
//    EveryModelAFileMatchesFloat64Logits). With p = softmax(z), r_i = log p_i - log q_i and
//    K = sum p_i r_i, dK/dz_i = p_i (r_i - K), so K moves by at most eps sum p_i |r_i - K|
//    to first order; the second-order rest is below eps^2 (2 + 3 max |r_i - K|) (each entry
//    of the Hessian, p_i (d_ik - p_k)(r_i - K) + p_i (d_ik - p_k - p_k (r_k - K)), summed).
//  - it stores each log-probability in float32 (relative error u = 2^-24) and sums
//    exp(lp) (lp - lq) in double: dK/dlp_i = p_i (1 + r_i), dK/dlq_i = -p_i, so at most
//    u sum p_i (|1 + r_i| |log p_i| + |log q_i|).
// The mean over positions of these, plus the report's rounding (%.4e: 5e-5 relative).
TEST(CliSearch, LlamaCppTypesOnTheParetoChart) {
  for (const char* f : {"gguf/modelA-F32.gguf", "gguf/tokens.txt", "gguf/tensor_types.tsv"})
    if (!fs::exists(shared(f))) GTEST_SKIP() << "../shared/" << f << " is absent";
  const fs::path d = temp_dir();
  {
    std::ofstream calib(d / "calib.ids");
    for (int i = 0; i < 256; ++i) calib << 3 + (i * 37) % 509 << "\n";
  }
  std::string base;
  for (const char* t : {"Q4_0", "Q6_K"})
    base += std::string(base.empty() ? "" : ",") + shared("gguf/modelA-") + t + ".gguf=" + shared("gguf/logits/logits_modelA_") + t + ".f32le.bin";
  const auto r = lowp_run({"search", "--model", shared("gguf/modelA-F32.gguf"), "--tokens", (d / "calib.ids").string(),
                           "--eval", shared("gguf/tokens.txt"), "--ctx", "128", "--menu", "int8:row:int,bf16", "--budget",
                           "9,16", "--out", (d / "r.txt").string(), "--plot", (d / "p.svg").string(), "--base-logits", base,
                           "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<double> ref = read_binary<double>(shared("gguf/logits/logits_modelA_F32_dequant_f64.f64le.bin"));
  for (const char* t : {"Q4_0", "Q6_K"}) {
    const std::string name = std::string("modelA-") + t;
    const std::size_t at = r.out.find("\n" + name + " ");
    ASSERT_NE(at, std::string::npos) << r.out;
    std::istringstream row(r.out.substr(at + 1 + name.size()));
    double bpw = 0, kld = 0;
    std::string predicted;
    row >> bpw >> predicted >> kld;
    EXPECT_NEAR(bpw, tsv_bits_per_weight(name + ".gguf"), 5e-5) << name;
    const std::vector<float> q = read_binary<float>(shared("gguf/logits/logits_modelA_") + t + ".f32le.bin");
    const std::size_t V = 512;
    const double eps = 1e-4, u = std::ldexp(1.0, -24);
    double sum = 0, bound = 0;
    int n = 0;
    for (std::size_t pos = 64; pos + 1 < 128; ++pos, ++n) {  // the second half of the window, as scored
      double mp = -1e300, mq = -1e300, sp = 0, sq = 0;
      for (std::size_t j = 0; j < V; ++j) mp = std::max(mp, ref[pos * V + j]), mq = std::max(mq, static_cast<double>(q[pos * V + j]));
      for (std::size_t j = 0; j < V; ++j) sp += std::exp(ref[pos * V + j] - mp), sq += std::exp(q[pos * V + j] - mq);
      std::vector<double> lp(V), lq(V);
      double k = 0;
      for (std::size_t j = 0; j < V; ++j) {
        lp[j] = ref[pos * V + j] - mp - std::log(sp), lq[j] = q[pos * V + j] - mq - std::log(sq);
        k += std::exp(lp[j]) * (lp[j] - lq[j]);
      }
      double first = 0, worst = 0, stored = 0;
      for (std::size_t j = 0; j < V; ++j) {
        const double p = std::exp(lp[j]), r = lp[j] - lq[j];
        first += p * std::fabs(r - k);
        worst = std::max(worst, std::fabs(r - k));
        stored += p * (std::fabs(1 + r) * std::fabs(lp[j]) + std::fabs(lq[j]));
      }
      sum += k;
      bound += eps * first + eps * eps * (2 + 3 * worst) + u * stored;
    }
    EXPECT_NEAR(kld, sum / n, bound / n + 5e-5 * kld) << name;
  }
  EXPECT_NE(read(d / "p.svg").find("llama.cpp type, measured"), std::string::npos);
  const auto no_eval = lowp_run({"search", "--model", shared("gguf/modelA-F32.gguf"), "--tokens", (d / "calib.ids").string(),
                                 "--ctx", "128", "--menu", "int8:row:int", "--budget", "9", "--out", (d / "r.txt").string(),
                                 "--base-logits", base});
  expect_usage(no_eval, "--base-logits needs --eval");
  fs::remove_all(d);
}

}  // namespace
