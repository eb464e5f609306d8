// weights.calibrate in the evaluator (docs/calibration.md): lowp's importance matrix against
// llama.cpp's own (model A), the cache giving the bits a recompute gives, the same bits at 1
// and 2 threads, and the KLD of each method under int4-g32 on held-out Shakespeare.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <unistd.h>

#include "llama_test_util.hpp"
#include "lowp/accuracy/calibrate.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/metrics.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/calibrate_imatrix.hpp"

namespace {

namespace fs = std::filesystem;
using namespace lowp;
using lowp::test::shared_path;

std::string read_text(const std::string& path, std::size_t offset, std::size_t n) {
  std::ifstream f(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s.substr(std::min(offset, s.size()), n);
}

// llama-imatrix on model A (../shared/gguf/imatrix/README.md): the first 60,000 bytes of the
// corpus tokenized with BOS, 40 chunks of 128 tokens, each chunk's first token replaced by BOS,
// every position of every chunk counted. lowp's windows are the same when given those 5120
// tokens with ctx 128 and the window BOS.
//
// Tolerance: llama-imatrix (default options) keeps K and V in an F16 cache, so from the first
// attention on its activations carry relative perturbations of order the F16 unit roundoff
// u = 2^-11 ~ 4.9e-4 (softmax and P V are convex combinations of rounded values: the error
// stays a small multiple of u per layer); a mean of squares doubles a relative error. With 2
// layers: |rel| <= 2 * 2 * (2 u) ~ 4e-3 for the inputs after the first attention, and the
// inputs of layer 0's q/k/v see no F16 rounding at all (float32 throughout: only summation
// order, ~1e-6). llama.cpp sums x^2 in float32 over 5120 rows: n u_f32 ~ 3e-4 at worst.
TEST(Calibrate, ImportanceMatrixMatchesLlamaCpp) {
  const std::string model_path = shared_path("gguf/modelA-F32.gguf");
  const std::string dat = shared_path("gguf/imatrix/modelA.imatrix.dat");
  const std::string corpus = shared_path("data/tinyshakespeare.txt");
  if (!fs::exists(model_path) || !fs::exists(dat) || !fs::exists(corpus))
    GTEST_SKIP() << "../shared/gguf/modelA-F32.gguf, its imatrix or the Shakespeare corpus is absent";
  const accuracy::LlamaModel model = accuracy::load_model(model_path);
  const accuracy::Tokenizer tok = accuracy::tokenizer_for_model(model_path, model.config.vocab_size);
  std::vector<int> ids = tok.encode(read_text(corpus, 0, 60000), true);
  ASSERT_GE(ids.size(), 40u * 128u);
  ids.resize(40 * 128);
  accuracy::CalibrationText text;
  text.tokens = ids;
  text.bos = tok.bos();
  text.ctx = 128;
  const auto mine = accuracy::importance_matrix(model, text, 128, 2);
  const quant::ImatrixFile ref = quant::read_imatrix(dat);
  ASSERT_EQ(ref.entries.size(), 14u);
  double worst_l0_qkv = 0, worst = 0;
  for (const quant::ImatrixEntry& e : ref.entries) {
    ASSERT_TRUE(mine.count(e.name)) << e.name;
    const std::vector<float> want = e.importance();
    const std::vector<float>& got = mine.at(e.name);
    ASSERT_EQ(got.size(), want.size()) << e.name;
    for (std::size_t j = 0; j < want.size(); ++j) {
      const double rel = std::fabs(static_cast<double>(got[j]) - want[j]) / std::max(1e-30, static_cast<double>(want[j]));
      worst = std::max(worst, rel);
      if (e.name.starts_with("blk.0.attn_q") || e.name.starts_with("blk.0.attn_k") || e.name.starts_with("blk.0.attn_v"))
        worst_l0_qkv = std::max(worst_l0_qkv, rel);
      ASSERT_LE(rel, 4e-3) << e.name << " column " << j << ": lowp " << got[j] << ", llama.cpp " << want[j];
    }
  }
  EXPECT_LE(worst_l0_qkv, 3e-4) << "layer 0's q/k/v inputs involve no F16 rounding";
  std::printf("imatrix vs llama.cpp: largest relative difference %.3g (layer 0 q/k/v %.3g)\n", worst, worst_l0_qkv);
}

struct Shakespeare {
  accuracy::LlamaModel model;
  std::vector<int> calib, eval;
};

// The built-in byte-level Shakespeare model; calibration text from the start of the corpus,
// evaluation text from its held-out last 10%.
const Shakespeare* shakespeare() {
  static std::unique_ptr<Shakespeare> s = [] {
    std::unique_ptr<Shakespeare> r;
    const std::string corpus = shared_path("data/tinyshakespeare.txt");
    std::string path;
    try {
      path = accuracy::resolve_model_path("shakespeare");
    } catch (const Error&) {
      return r;
    }
    if (!fs::exists(corpus)) return r;
    r = std::make_unique<Shakespeare>();
    r->model = accuracy::load_model(path);
    const accuracy::Tokenizer tok = accuracy::tokenizer_for_model(path, r->model.config.vocab_size);
    r->calib = tok.encode(read_text(corpus, 0, 1200), false);
    r->eval = tok.encode(read_text(corpus, 1115394 - 900, 900), false);
    return r;
  }();
  return s.get();
}

accuracy::Recipe recipe(const std::string& method) {
  return accuracy::parse_recipe("name = g32-" + method + "\nweights = int4:b32:int\nweights.calibrate = " + method + "\n");
}

accuracy::EvalRun run(const Shakespeare& s, const accuracy::Recipe& r, int threads, const std::string& cache = "",
                      std::string* warned = nullptr) {
  accuracy::EvalOptions opt;
  opt.ctx = 64;
  opt.threads = threads;
  opt.keep_logits = true;
  auto t = std::make_shared<accuracy::CalibrationText>();
  t->tokens = s.calib;
  t->model_id = "shakespeare (test)";
  t->cache_dir = cache;
  if (warned) t->warn = [warned](const std::string& m) { *warned += m; };
  opt.calib = t;
  return accuracy::evaluate(s.model, s.eval, r, opt);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Each method at 1 and 2 threads (the same bits), its KLD on held-out text against RTN's
// (printed: the figures are in docs/calibration.md), and GPTQ's cache: written, read back, and
// a corrupt file ignored with a warning and recomputed, every time the same bits.
TEST(Calibrate, SameBitsAtOneAndTwoThreadsFromTheCacheAndKldReported) {
  const Shakespeare* s = shakespeare();
  if (!s) GTEST_SKIP() << "the built-in shakespeare model or ../shared/data/tinyshakespeare.txt is absent";
  accuracy::EvalOptions opt;
  opt.ctx = 64;
  const accuracy::EvalRun ref = accuracy::evaluate(s->model, s->eval, accuracy::find_recipe("fp32"), opt);
  const accuracy::EvalRun rtn = run(*s, recipe("none"), 2);
  const double kld_rtn = accuracy::compare(ref, rtn).kld_mean;
  std::vector<float> gptq_bits;
  for (const char* m : {"imatrix", "gptq", "awq"}) {
    const accuracy::EvalRun one = run(*s, recipe(m), 1), two = run(*s, recipe(m), 2);
    EXPECT_TRUE(same_bits(one.logits, two.logits)) << m << ": 1 vs 2 threads";
    EXPECT_FALSE(same_bits(one.logits, rtn.logits)) << m << " changed nothing";
    const accuracy::Comparison c = accuracy::compare(ref, two);
    std::printf("int4-g32 %-8s KLD %.6f +- %.6f (RTN %.6f) on %zu held-out positions\n", m, c.kld_mean, c.kld_se,
                kld_rtn, two.scored());
    EXPECT_TRUE(std::isfinite(c.kld_mean) && c.kld_mean > 0) << m;
    // The weight errors are those of the calibrated weights, one entry per quantized linear.
    std::size_t weights = 0;
    for (const auto& e : two.tensor_errors) weights += !e.point.starts_with("x.") && e.layer >= 0;
    EXPECT_EQ(weights, 7u * s->model.layers.size()) << m;
    if (std::string(m) == "gptq") gptq_bits = one.logits;
  }
  const fs::path dir = fs::temp_directory_path() / ("lowp_calib_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const accuracy::EvalRun written = run(*s, recipe("gptq"), 2, dir.string());
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".lowpcal";
  EXPECT_EQ(files, 1u);
  EXPECT_TRUE(same_bits(gptq_bits, written.logits));
  EXPECT_TRUE(same_bits(gptq_bits, run(*s, recipe("gptq"), 1, dir.string()).logits)) << "from the cache";
  for (const auto& e : fs::directory_iterator(dir)) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  std::string warned;
  EXPECT_TRUE(same_bits(gptq_bits, run(*s, recipe("gptq"), 2, dir.string(), &warned).logits)) << "recomputed";
  EXPECT_NE(warned.find("ignored (checksum mismatch)"), std::string::npos) << warned;
  fs::remove_all(dir);
}

TEST(Calibrate, RecipeKeysAndErrors) {
  const accuracy::Recipe r = accuracy::parse_recipe(
      "name = g\nweights = int4:b32:int\nweights.calibrate = gptq\nweights.calibrate.act_order = on\n"
      "weights.calibrate.damp = 0.1\nweights.calibrate.scales = imatrix\n");
  EXPECT_EQ(r.calibrate.method, accuracy::CalibMethod::gptq);
  EXPECT_TRUE(r.calibrate.act_order);
  EXPECT_EQ(r.calibrate.damp, 0.1);
  EXPECT_TRUE(r.calibrate.imatrix_scales);
  const accuracy::Recipe back = accuracy::parse_recipe(accuracy::to_text(r));
  EXPECT_EQ(accuracy::to_text(back), accuracy::to_text(r));
  const accuracy::Recipe a = accuracy::parse_recipe("name = a\nweights = mxfp4\nweights.calibrate = awq\nweights.calibrate.grid = 10\n");
  EXPECT_EQ(a.calibrate.grid, 10u);
  EXPECT_THROW(accuracy::parse_recipe("name = x\nweights.calibrate = smoothquant\n"), Error);
  EXPECT_THROW(accuracy::parse_recipe("name = x\nweights.calibrate.grid = 0\n"), Error);
  EXPECT_THROW(accuracy::parse_recipe("name = x\nweights.calibrate.nope = 1\n"), Error);
  const Shakespeare* s = shakespeare();
  if (!s) GTEST_SKIP() << "the built-in shakespeare model is absent";
  accuracy::EvalOptions opt;
  opt.ctx = 64;
  try {
    accuracy::evaluate(s->model, s->eval, recipe("gptq"), opt);
    FAIL() << "no calibration text";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs calibration text (--calib FILE)"), std::string::npos) << e.what();
  }
}

}  // namespace
