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
  expect_error([&] { load_model(dir + "/empty.bin"); }, {"empty.bin", "header field dim", "runs past the end of the file (0 bytes)"});
  write_text(dir + "/text.bin", "this is not a model file at all, just text\n");
  expect_error([&] { load_model(dir + "/text.bin"); }, {"text.bin", "dim 1936287860 is not a multiple of n_heads"});
  std::filesystem::remove_all(dir);
}

}  // namespace
