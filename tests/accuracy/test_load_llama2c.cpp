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
LlamaConfig llama2c_config() {
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
    const LlamaModel m = lowp::test::random_model(llama2c_config(), tied ? 1 : 2, tied);
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
  const LlamaModel m = lowp::test::random_model(llama2c_config(), 3);
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

// --- the int8 export (export.py version 2, runq.c) ---------------------------------------

const std::string kTinyF32 = std::string(LOWP_SHARED_DIR) + "/models/tinyllamas/stories260K.bin";
const std::string kTinyQ80 = std::string(LOWP_SHARED_DIR) + "/models/tinyllamas/stories260K_q80.bin";

// The int8 export of the same weights: norms identical, every weight within half a step
// (s / 2, s = the group's absmax / 127 as export.py sets it) of the float32 original.
TEST(LoadLlama2c, Q80ExportOfStories260K) {
  if (!std::filesystem::exists(kTinyQ80) || !std::filesystem::exists(kTinyF32))
    GTEST_SKIP() << "needs " << kTinyQ80 << " and " << kTinyF32;
  const LlamaModel f = load_llama2c(kTinyF32);
  const LlamaModel q = load_model(kTinyQ80);
  lowp::test::expect_same_config(f.config, q.config);
  EXPECT_TRUE(q.classifier.empty());
  std::size_t groups = 0;
  lowp::test::for_each_tensor(f, q, [&](const std::string& n, const std::vector<float>& x, const std::vector<float>& y) {
    ASSERT_EQ(x.size(), y.size()) << n;
    if (n.find("norm") != std::string::npos) {
      EXPECT_EQ(x, y) << n;
      return;
    }
    for (std::size_t g = 0; g < x.size(); g += 32, ++groups) {
      float amax = 0;
      for (std::size_t i = g; i < g + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
      const double step = amax / 127.0;
      for (std::size_t i = g; i < g + 32; ++i)
        ASSERT_LE(std::fabs(double(x[i]) - y[i]), step * (0.5 + 1e-5)) << n << " [" << i << "]";
    }
  });
  EXPECT_GT(groups, 5000u);
}

// A hand-made int8 file: codes and scales chosen here, every value q * s exactly.
std::vector<std::uint8_t> q80_bytes(const LlamaConfig& c, bool shared, int gs, std::uint32_t seed) {
  std::vector<std::uint8_t> b(256, 0);
  auto put = [&](const void* p, std::size_t n, std::size_t at) { std::memcpy(b.data() + at, p, n); };
  const std::uint32_t magic = 0x616b3432;
  const std::int32_t h[9] = {2, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len, 0};
  put(&magic, 4, 0);
  put(h, 32, 4);
  b[36] = shared;
  put(&gs, 4, 37);
  auto f32 = [&](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const float v = 1.0f + static_cast<float>((i * 7 + seed) % 13) / 64.0f;
      const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
      b.insert(b.end(), p, p + 4);
    }
  };
  auto q8 = [&](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>((i * 37 + seed) % 256));
    for (std::size_t g = 0; g < n / gs; ++g) {
      const float s = std::ldexp(1.0f + static_cast<float>(g % 5) / 8.0f, -7 - static_cast<int>(g % 3));
      const auto* p = reinterpret_cast<const std::uint8_t*>(&s);
      b.insert(b.end(), p, p + 4);
    }
  };
  const std::size_t dim = c.dim, hid = c.hidden_dim, kv = c.kv_dim();
  f32(2 * c.n_layers * dim + dim);
  q8(c.vocab_size * dim);
  for (std::size_t n : {dim * dim, kv * dim, kv * dim, dim * dim, hid * dim, dim * hid, hid * dim})
    for (int l = 0; l < c.n_layers; ++l) q8(n);
  if (!shared) q8(c.vocab_size * dim);
  return b;
}

TEST(LoadLlama2c, Q80ByHand) {
  const LlamaConfig c = llama2c_config();
  for (bool shared : {true, false}) {
    const auto b = q80_bytes(c, shared, 16, 5);
    const LlamaModel m = load_llama2c_bytes(b, "q.bin");
    EXPECT_EQ(m.classifier.empty(), shared);
    // token_embedding: the first quantized tensor, right after the norms.
    const std::size_t at = 256 + 4 * (2 * c.n_layers * c.dim + c.dim), n = static_cast<std::size_t>(c.vocab_size) * c.dim;
    for (std::size_t i : {std::size_t{0}, std::size_t{17}, n / 2 + 3, n - 1}) {
      const auto code = static_cast<std::int8_t>(b[at + i]);
      float s;
      std::memcpy(&s, &b[at + n + 4 * (i / 16)], 4);
      EXPECT_EQ(m.token_embedding[i], static_cast<float>(code) * s) << i;
    }
    float norm0;
    std::memcpy(&norm0, &b[256], 4);
    EXPECT_EQ(m.layers[0].attn_norm[0], norm0);
    float ffn0;
    std::memcpy(&ffn0, &b[256 + 4 * c.n_layers * c.dim], 4);
    EXPECT_EQ(m.layers[0].ffn_norm[0], ffn0);
    // The last tensor: the classifier, or w3 of the last layer.
    const std::size_t last = shared ? static_cast<std::size_t>(c.hidden_dim) * c.dim : n;
    const std::size_t begin = b.size() - last - 4 * (last / 16);
    const std::vector<float>& t = shared ? m.layers.back().w_up : m.classifier;
    float s;
    std::memcpy(&s, &b[begin + last], 4);
    EXPECT_EQ(t[5], static_cast<float>(static_cast<std::int8_t>(b[begin + 5])) * s);
  }
}

TEST(LoadLlama2c, Q80BadFiles) {
  const LlamaConfig c = llama2c_config();
  const auto good = q80_bytes(c, false, 16, 1);
  auto load = [](const std::vector<std::uint8_t>& b) { return load_llama2c_bytes(b, "q.bin"); };
  ASSERT_NO_THROW(load(good));
  auto set = [&](std::size_t at, std::int32_t v) {
    auto b = good;
    std::memcpy(b.data() + at, &v, 4);
    return b;
  };
  expect_error([&] { load(set(4, 1)); }, {"q.bin", "export version 1 is not supported"});
  expect_error([&] { load(set(37, 0)); }, {"q.bin", "group_size is 0"});
  expect_error([&] { load(set(37, 48)); }, {"q.bin", "not a multiple of group_size 48"});
  expect_error([&] { load(std::vector<std::uint8_t>(good.begin(), good.end() - 1)); },
               {"q.bin", "implies " + std::to_string(good.size()) + " bytes"});
  auto sh = good;
  sh[36] = 7;
  expect_error([&] { load(sh); }, {"q.bin", "shared_classifier is 7"});
  expect_error([&] { load(std::vector<std::uint8_t>(good.begin(), good.begin() + 20)); }, {"q.bin", "header field n_heads"});
  expect_error([&] { load(set(8, -64)); }, {"q.bin", "dim is -64"});
}

}  // namespace
