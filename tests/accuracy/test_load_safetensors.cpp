// Hugging Face safetensors + config.json: round trips (with the q/k rotate-half permutation
// undone), F16/BF16 precision, sharded directories, bad headers and configs.
#include <gtest/gtest.h>

#include <filesystem>

#include "loader_test_util.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "model_files.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

TEST(LoadSafetensors, HfPermutationByHand) {
  // One head of head_dim 8, one column: interleaved rows 0..7 -> HF rows 0,2,4,6,1,3,5,7.
  const std::vector<float> w = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(hf_permute(w, 1, 8, 1), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  // Two heads of head_dim 4, two columns.
  const std::vector<float> w2 = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
  EXPECT_EQ(hf_permute(w2, 2, 4, 2), (std::vector<float>{0, 0, 2, 2, 1, 1, 3, 3, 4, 4, 6, 6, 5, 5, 7, 7}));
}

TEST(LoadSafetensors, RoundTrip) {
  const std::string dir = temp_dir("st_rt");
  for (bool tied : {true, false}) {
    const LlamaModel m = random_model(small_config(), 40 + tied, tied);
    write_safetensors(dir, m);
    const LlamaModel a = load_safetensors(dir);
    expect_identical(m, a);  // includes wq/wk: the loader undid the writer's permutation
    EXPECT_EQ(a.classifier.empty(), tied);
    EXPECT_EQ(a.source, "safetensors");
    expect_identical(m, load_safetensors(dir + "/model.safetensors"));
    expect_identical(m, load_model(dir));
    expect_identical(m, load_model(dir + "/model.safetensors"));
  }
  std::filesystem::remove_all(dir);
}

TEST(LoadSafetensors, HalfPrecision) {
  const LlamaModel m = random_model(small_config(), 42, false);
  const std::string cfg = hf_config_json(m);
  expect_close(m, load_safetensors_bytes(safetensors_bytes(m, StDtype::f16), cfg, "m"), 0x1p-11, 0x1p-25);
  expect_close(m, load_safetensors_bytes(safetensors_bytes(m, StDtype::bf16), cfg, "m"), 0x1p-8, 0);
}

TEST(LoadSafetensors, ShardedDirectory) {
  // Split one file's tensors over two shards by writing two models' headers: shard 1 holds
  // the model, shard 2 a lone extra tensor; then a duplicate across shards is refused.
  const std::string dir = temp_dir("st_shard");
  const LlamaModel m = random_model(small_config(), 43);
  write_safetensors(dir, m);
  std::filesystem::rename(dir + "/model.safetensors", dir + "/model-00001-of-00002.safetensors");
  const std::string extra = "{\"rotary.inv_freq\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  ByteSink s;
  s.put<std::uint64_t>(extra.size());
  s.put_bytes(extra.data(), extra.size());
  s.put<float>(1.0f);
  s.put<float>(2.0f);
  write_file(dir + "/model-00002-of-00002.safetensors", s.b);
  expect_identical(m, load_safetensors(dir));
  write_file(dir + "/model-00002-of-00002.safetensors", safetensors_bytes(m));
  expect_error([&] { load_safetensors(dir); }, {"model-00002-of-00002.safetensors", "'model.embed_tokens.weight' appears in more than one file"});
  std::filesystem::remove_all(dir);
}

// The file with one edit of its JSON header (the header length follows the edit).
std::vector<std::uint8_t> edited(const std::vector<std::uint8_t>& b, const std::string& from, const std::string& to) {
  std::uint64_t n;
  std::memcpy(&n, b.data(), 8);
  std::string h(b.begin() + 8, b.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  const auto p = h.find(from);
  if (p == std::string::npos) throw std::runtime_error("'" + from + "' not in the header");
  h.replace(p, from.size(), to);
  ByteSink s;
  s.put<std::uint64_t>(h.size());
  s.put_bytes(h.data(), h.size());
  s.b.insert(s.b.end(), b.begin() + 8 + static_cast<std::ptrdiff_t>(n), b.end());
  return s.b;
}

TEST(LoadSafetensors, BadFiles) {
  const LlamaModel m = random_model(small_config(), 44);
  const auto good = safetensors_bytes(m);
  const std::string cfg = hf_config_json(m);
  auto load = [&](const std::vector<std::uint8_t>& b, const std::string& c) { return load_safetensors_bytes(b, c, "m.safetensors"); };
  ASSERT_NO_THROW(load(good, cfg));
  std::uint64_t hlen;
  std::memcpy(&hlen, good.data(), 8);
  for (std::size_t n = 0; n < 8; ++n)
    expect_error([&] { load({good.begin(), good.begin() + n}, cfg); }, {"m.safetensors", "header length", "runs past the end"});
  expect_error([&] { load({good.begin(), good.begin() + 100}, cfg); }, {"m.safetensors", "JSON header", "runs past the end"});
  for (std::size_t n = 8; n < 8 + hlen; ++n) EXPECT_THROW(load({good.begin(), good.begin() + n}, cfg), lowp::Error) << n;
  for (std::size_t n = 8 + hlen; n < good.size(); n += 97)
    expect_error([&] { load({good.begin(), good.begin() + n}, cfg); }, {"m.safetensors", "lie outside the data section"});
  expect_error([&] { load(patched<std::uint64_t>(good, 0, ~std::uint64_t{0}), cfg); }, {"m.safetensors", "exceeds the 100 MB limit"});
  expect_error([&] { load(patched<char>(good, 8, '['), cfg); }, {"m.safetensors header: bad JSON at byte"});
  expect_error([&] { load(patched<char>(good, 20, '\x01'), cfg); }, {"bad JSON at byte 12: control character in string"});
  expect_error([&] { load(edited(good, "\"dtype\": \"F32\"", "\"dtype\": \"I32\""), cfg); },
               {"m.safetensors", "'model.embed_tokens.weight' has dtype 'I32', which lowp does not load"});
  expect_error([&] { load(edited(good, "\"dtype\": \"F32\"", "\"dtype\": \"F16\""), cfg); },
               {"m.safetensors", "'model.embed_tokens.weight' has", "data bytes, its dtype 'F16' and shape need"});
  expect_error([&] { load(edited(good, "model.norm.weight", "model.norm.weighX"), cfg); },
               {"m.safetensors", "tensor 'model.norm.weight' is missing"});
  expect_error([&] { load(edited(good, "\"shape\": [16]", "\"shape\": [-1]"), cfg); },
               {"m.safetensors", "shape has an entry that is not a non-negative integer"});
  // A shape that is wrong but holds the same bytes.
  expect_error([&] { load(edited(good, "\"shape\": [40, 16]", "\"shape\": [16, 40]"), cfg); },
               {"m.safetensors", "'model.embed_tokens.weight' has shape [16, 40], expected [40, 16]"});
  expect_error([&] { load(edited(good, "\"data_offsets\": [0, ", "\"data_offsets\": [9, "), cfg); },
               {"m.safetensors", "data bytes"});
  expect_error([&] { load(edited(good, "\"shape\": [40, 16]", "\"shape\": [4294967296, 4294967296]"), cfg); },
               {"m.safetensors", "overflows 64 bits"});

  // config.json problems.
  auto cfg_with = [&](const std::string& from, const std::string& to) {
    std::string c = cfg;
    const auto p = c.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    return c.replace(p, from.size(), to);
  };
  expect_error([&] { load(good, cfg_with("\"hidden_size\"", "\"hidden_sizX\"")); }, {"config.json: 'hidden_size' is missing"});
  expect_error([&] { load(good, cfg_with("\"hidden_size\": 16", "\"hidden_size\": 0")); }, {"config.json: hidden_size is 0"});
  expect_error([&] { load(good, cfg_with("\"hidden_size\": 16", "\"hidden_size\": -16")); }, {"'hidden_size' must be a positive integer"});
  expect_error([&] { load(good, cfg_with("\"hidden_size\": 16", "\"hidden_size\": 1e999")); }, {"'hidden_size' must be a positive integer"});
  expect_error([&] { load(good, cfg_with("\"hidden_size\": 16", "\"hidden_size\": 32")); },
               {"'model.embed_tokens.weight' has shape [40, 16], expected [40, 32]"});
  expect_error([&] { load(good, cfg_with("\"llama\"", "\"gpt2\"")); }, {"config.json: model_type 'gpt2' is not supported"});
  expect_error([&] { load(good, cfg_with("{", "{\"rope_scaling\": {\"type\": \"llama3\"},")); }, {"rope_scaling.factor is missing"});
  expect_error([&] { load(good, cfg_with("{", "{\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2},")); },
               {"rope_scaling type 'dynamic' is not supported"});
  expect_error([&] { load(good, cfg_with("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false")); },
               {"'lm_head.weight' is missing (config.json says tie_word_embeddings is false)"});
  expect_error([&] { load(good, cfg_with("}", "")); }, {"config.json: bad JSON at byte", "expected '}'"});
  expect_error([&] { load(good, cfg + "x"); }, {"trailing characters"});
  expect_error([&] { load(good, std::string(100, '[') + std::string(100, ']')); }, {"nested deeper than 64"});
  expect_error([&] { load(good, "{\"a\": 1, \"a\": 2}"); }, {"duplicate key 'a'"});
  expect_error([&] { load(good, "{\"a\": \"\\ud800\"}"); }, {"unpaired surrogate"});
  expect_error([&] { load(good, "{\"a\": 01}"); }, {"leading zero"});
  expect_error([&] { load(good, "[1, 2]"); }, {"config.json: not a JSON object"});

  // Files on disk: no config.json, an empty directory.
  const std::string dir = temp_dir("st_bad");
  write_file(dir + "/model.safetensors", good);
  expect_error([&] { load_safetensors(dir); }, {"no config.json beside it"});
  std::filesystem::remove(dir + "/model.safetensors");
  expect_error([&] { load_safetensors(dir); }, {"no .safetensors files in this directory"});
  std::filesystem::remove_all(dir);
}

}  // namespace
