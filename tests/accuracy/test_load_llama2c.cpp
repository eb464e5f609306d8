// llama2.c legacy checkpoints: the shared stories260K model, writer round trips, bad headers.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "lowp/accuracy/loaders.hpp"
#include "loader_test_util.hpp"
#include "model_files.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using lowp::test::expect_error;

// llama2.c files carry no norm epsilon or RoPE theta: the loader's defaults apply.
LlamaConfig small_config() {
  LlamaConfig c = lowp::test::small_config();
  c.norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  return c;
}

const std::string kStories = std::string(LOWP_SHARED_DIR) + "/models/stories260K.bin";

// One float32 read straight from the file at a float index past the 28-byte header.
float raw_float(const std::string& path, std::size_t float_index) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr);
  float v = 0;
  std::fseek(f, static_cast<long>(28 + 4 * float_index), SEEK_SET);
  EXPECT_EQ(std::fread(&v, 4, 1, f), 1u);
  std::fclose(f);
  return v;
}

TEST(LoadLlama2c, Stories260K) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << "needs " << kStories;
  const LlamaModel m = load_llama2c(kStories);
  const LlamaConfig& c = m.config;
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.seq_len, 512);
  EXPECT_TRUE(m.classifier.empty());  // positive vocab size: tied
  EXPECT_EQ(m.source, "llama2c");
  EXPECT_EQ(&m.output_weight(), &m.token_embedding);

  // Offsets computed here from llama2.c's layout (float indices after the header).
  const std::size_t dim = 64, hid = 172, L = 5, kv = 32, vocab = 512;
  const std::size_t emb = 0, rms_att = emb + vocab * dim, wq = rms_att + L * dim;
  const std::size_t wk = wq + L * dim * dim, wv = wk + L * kv * dim, wo = wv + L * kv * dim;
  const std::size_t rms_ffn = wo + L * dim * dim, w1 = rms_ffn + L * dim, w2 = w1 + L * hid * dim;
  const std::size_t w3 = w2 + L * dim * hid, rms_final = w3 + L * hid * dim;
  EXPECT_EQ(m.token_embedding[7 * dim + 3], raw_float(kStories, emb + 7 * dim + 3));
  EXPECT_EQ(m.token_embedding[511 * dim + 63], raw_float(kStories, emb + 511 * dim + 63));
  EXPECT_EQ(m.layers[0].attn_norm[5], raw_float(kStories, rms_att + 5));
  EXPECT_EQ(m.layers[2].wq[9 * dim + 11], raw_float(kStories, wq + 2 * dim * dim + 9 * dim + 11));
  EXPECT_EQ(m.layers[3].wk[31 * dim + 1], raw_float(kStories, wk + 3 * kv * dim + 31 * dim + 1));
  EXPECT_EQ(m.layers[4].wv[17 * dim + 40], raw_float(kStories, wv + 4 * kv * dim + 17 * dim + 40));
  EXPECT_EQ(m.layers[1].wo[63 * dim + 62], raw_float(kStories, wo + 1 * dim * dim + 63 * dim + 62));
  EXPECT_EQ(m.layers[4].ffn_norm[63], raw_float(kStories, rms_ffn + 4 * dim + 63));
  EXPECT_EQ(m.layers[2].w_gate[171 * dim + 2], raw_float(kStories, w1 + 2 * hid * dim + 171 * dim + 2));
  EXPECT_EQ(m.layers[3].w_down[10 * hid + 170], raw_float(kStories, w2 + 3 * dim * hid + 10 * hid + 170));
  EXPECT_EQ(m.layers[4].w_up[100 * dim + 50], raw_float(kStories, w3 + 4 * hid * dim + 100 * dim + 50));
  EXPECT_EQ(m.final_norm[0], raw_float(kStories, rms_final));
  EXPECT_EQ(m.final_norm[63], raw_float(kStories, rms_final + 63));
  // Not a vacuous comparison: the norms are near 1, embeddings are not all zero.
  EXPECT_GT(m.final_norm[0], 0.1f);
  EXPECT_NE(m.token_embedding[7 * dim + 3], 0.0f);

  // load_model recognises it too.
  EXPECT_EQ(load_model(kStories).token_embedding, m.token_embedding);
}

TEST(LoadLlama2c, RoundTripTiedAndSeparate) {
  const std::string dir = lowp::test::temp_dir("llama2c_rt");
  for (bool tied : {true, false}) {
    const LlamaModel m = lowp::test::random_model(small_config(), tied ? 1 : 2, tied);
    const std::string path = dir + "/m.bin";
    lowp::test::write_llama2c(path, m);
    const LlamaModel r = load_llama2c(path);
    lowp::test::expect_same_config(m.config, r.config);
    lowp::test::expect_identical(m, r);
    EXPECT_EQ(r.classifier.empty(), tied);
    lowp::test::expect_identical(m, load_model(path));
  }
  std::filesystem::remove_all(dir);
}

std::vector<std::uint8_t> with_field(std::vector<std::uint8_t> b, int field, std::int32_t v) {
  std::memcpy(b.data() + 4 * field, &v, 4);
  return b;
}

TEST(LoadLlama2c, BadHeaders) {
  const LlamaModel m = lowp::test::random_model(small_config(), 3);
  const auto good = lowp::test::llama2c_bytes(m);
  auto load = [](const std::vector<std::uint8_t>& b) { return load_llama2c_bytes(b, "m.bin"); };
  const char* names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  // Truncation inside every header field names that field.
  for (std::size_t n = 0; n < 28; ++n) {
    std::vector<std::uint8_t> b(good.begin(), good.begin() + n);
    expect_error([&] { load(b); }, {"m.bin", std::string("header field ") + names[n / 4], "runs past the end"});
  }
  // Sizes that disagree with the file: one byte short, one byte extra, a wrong dimension.
  expect_error([&] { load(std::vector<std::uint8_t>(good.begin(), good.end() - 1)); },
               {"m.bin", "implies " + std::to_string(good.size()) + " bytes", "has " + std::to_string(good.size() - 1)});
  auto longer = good;
  longer.push_back(0);
  expect_error([&] { load(longer); }, {"m.bin", "implies", "the file has"});
  expect_error([&] { load(with_field(good, 1, 25)); }, {"m.bin", "hidden_dim 25", "implies"});
  // Negative and zero dims, inconsistent heads.
  expect_error([&] { load(with_field(good, 0, -16)); }, {"m.bin", "dim is -16, must be positive"});
  expect_error([&] { load(with_field(good, 2, 0)); }, {"m.bin", "n_layers is 0"});
  expect_error([&] { load(with_field(good, 6, 0)); }, {"m.bin", "seq_len is 0"});
  expect_error([&] { load(with_field(good, 5, INT32_MIN)); }, {"m.bin", "vocab_size is 0"});
  expect_error([&] { load(with_field(good, 3, 5)); }, {"m.bin", "not a multiple of n_heads 5"});
  expect_error([&] { load(with_field(good, 4, 3)); }, {"m.bin", "n_kv_heads 3"});
  // Huge counts are refused by the memory budget (validate) before any size arithmetic; a
  // size merely past the file by the file's length.
  auto huge = with_field(with_field(with_field(good, 0, 1 << 30), 1, INT32_MAX), 2, INT32_MAX);
  huge = with_field(with_field(huge, 3, 1), 4, 1);
  expect_error([&] { load(huge); }, {"m.bin", "n_layers 2147483647", "above the memory budget", "--max-memory"});
  expect_error([&] { load(with_field(good, 5, INT32_MAX)); }, {"m.bin", "vocab_size 2147483647", "--max-memory"});
  expect_error([&] { load(with_field(good, 5, 100000)); }, {"m.bin", "implies", "the file has"});
  // A missing file.
  expect_error([] { load_llama2c("/nonexistent/m.bin"); }, {"/nonexistent/m.bin", "cannot open"});
}

}  // namespace
