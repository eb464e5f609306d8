// One model through all three file formats gives the same weights; validate() and load_model()
// on inconsistent or unknown input.
#include <gtest/gtest.h>

#include <filesystem>

#include "loader_test_util.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "model_files.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

TEST(LoadModel, SameWeightsFromAllFormats) {
  const std::string dir = temp_dir("all_formats");
  LlamaConfig c = small_config();
  c.norm_eps = 1e-5f;  // llama2.c files cannot store other values
  c.rope_theta = 10000.0f;
  for (bool tied : {true, false}) {
    const LlamaModel m = random_model(c, 70 + tied, tied);
    write_llama2c(dir + "/m.bin", m);
    write_gguf(dir + "/m.gguf", m);
    write_safetensors(dir + "/hf", m);
    const LlamaModel a = load_model(dir + "/m.bin"), b = load_model(dir + "/m.gguf"), s = load_model(dir + "/hf");
    EXPECT_EQ(a.source, "llama2c");
    EXPECT_EQ(b.source, "gguf");
    EXPECT_EQ(s.source, "safetensors");
    expect_identical(m, a);
    expect_identical(a, b);
    expect_identical(a, s);
  }
  std::filesystem::remove_all(dir);
}

TEST(LoadModel, Validate) {
  LlamaModel m = random_model(small_config(), 72);
  m.path = "x.bin";
  EXPECT_NO_THROW(validate(m));
  LlamaModel bad = m;
  bad.layers[1].wk.pop_back();
  expect_error([&] { validate(bad); }, {"x.bin", "tensor 'layer 1 wk' has 127 elements, expected 8 x 16"});
  bad = m;
  bad.classifier.assign(7, 0.0f);
  expect_error([&] { validate(bad); }, {"x.bin", "'classifier' has 7 elements"});
  bad = m;
  bad.layers.pop_back();
  expect_error([&] { validate(bad); }, {"x.bin", "1 layers of weights, config says 2"});
  bad = m;
  bad.config.norm_eps = 0;
  expect_error([&] { validate(bad); }, {"x.bin", "norm_eps"});
  bad = m;
  bad.config.rope_theta = NAN;
  expect_error([&] { validate(bad); }, {"x.bin", "rope_theta"});
  bad = m;
  bad.config.n_heads = 16;  // head_dim 1: odd, RoPE needs pairs
  expect_error([&] { validate(bad); }, {"x.bin", "head_dim 1 is odd"});
}

TEST(LoadModel, UnknownFiles) {
  expect_error([] { load_model("/nonexistent/model"); }, {"/nonexistent/model", "cannot open"});
  const std::string dir = temp_dir("unknown_file");
  write_text(dir + "/empty.bin", "");
  const std::string not_one = "not a checkpoint lowp reads (llama2.c .bin, GGUF, safetensors)";
  expect_error([&] { load_model(dir + "/empty.bin"); }, {"empty.bin: " + not_one, "(0 bytes"});
  write_text(dir + "/text.bin", "this is not a model file at all, just text\n");
  expect_error([&] { load_model(dir + "/text.bin"); }, {"text.bin: " + not_one, "none of their headers"});
  if (std::filesystem::exists(LOWP_SHARED_DIR "/data/tinyshakespeare.txt"))  // issue 9's example
    expect_error([] { load_model(LOWP_SHARED_DIR "/data/tinyshakespeare.txt"); }, {"tinyshakespeare.txt: " + not_one});
  // What a file looked like, when it looked like one.
  const LlamaModel m = random_model(small_config(), 5);
  auto bin = llama2c_bytes(m);
  bin.resize(bin.size() - 4);  // one float short
  write_file(dir + "/short.bin", bin);
  expect_error([&] { load_model(dir + "/short.bin"); },
               {"short.bin: " + not_one, "looks like a llama2.c .bin", "imply " + std::to_string(bin.size() + 4),
                "the file has " + std::to_string(bin.size())});
  std::vector<std::uint8_t> st(16, 0);
  st[0] = 0xff;  // header length 255 > 8 bytes left
  st[8] = '{';
  write_file(dir + "/bad.safetensors", st);
  expect_error([&] { load_model(dir + "/bad.safetensors"); },
               {"bad.safetensors: " + not_one, "looks like safetensors", "header length 255"});
  write_text(dir + "/trunc.gguf", "GGUF\x03");
  expect_error([&] { load_model(dir + "/trunc.gguf"); }, {"trunc.gguf"});  // the GGUF reader's own error
  std::filesystem::remove_all(dir);
}

}  // namespace
