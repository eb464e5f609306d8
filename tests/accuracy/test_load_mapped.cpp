// WeightStorage::mapped: GGUF and safetensors weights left in the file in their stored type
// (f32, f16, bf16, every GGUF block type io/ggml decodes; HF q/k through a row map) give exactly the weights the widening
// loaders give, and evaluate() gives bitwise the same logits as on the widened model, under the
// fp32 recipe, a weight-quantizing recipe, SwitchBack's int8 engine and QuaRot.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/numerics/error.hpp"
#include "model_files.hpp"
#include "llama_test_util.hpp"

namespace lowp::accuracy {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void expect_same_weights(const LlamaModel& a, const LlamaModel& b, const std::string& what) {
  EXPECT_TRUE(same_bits(a.token_embedding, b.token_embedding)) << what;
  EXPECT_TRUE(same_bits(a.classifier, b.classifier)) << what;
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const LayerWeights &x = a.layers[l], &y = b.layers[l];
    for (auto f : {&LayerWeights::wq, &LayerWeights::wk, &LayerWeights::wv, &LayerWeights::wo, &LayerWeights::w_gate,
                   &LayerWeights::w_down, &LayerWeights::w_up, &LayerWeights::attn_norm, &LayerWeights::ffn_norm})
      EXPECT_TRUE(same_bits(x.*f, y.*f)) << what << " layer " << l;
  }
}

LlamaConfig config() {
  LlamaConfig c;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 80;
  c.seq_len = 32;
  return c;
}

void check_file(const std::string& path, const std::string& what) {
  const LlamaModel widened = load_model(path), mapped = load_model(path, WeightStorage::mapped);
  ASSERT_TRUE(mapped.mapped) << what;
  EXPECT_TRUE(mapped.layers[0].wq.empty() && mapped.token_embedding.empty()) << what << ": weights were copied";
  LlamaModel copy = mapped;
  widen_mapped(copy);
  EXPECT_FALSE(copy.mapped);
  expect_same_weights(widened, copy, what);

  std::vector<int> tokens(32);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>((i * 37 + 5) % 80);
  EvalOptions opt;
  opt.keep_logits = true;
  for (const char* recipe : {"fp32", "mxfp4", "switchback-int8", "quarot-w8a8kv4"}) {
    const Recipe r = find_recipe(recipe);
    const EvalRun a = evaluate(widened, tokens, r, opt), b = evaluate(mapped, tokens, r, opt);
    EXPECT_TRUE(same_bits(a.logits, b.logits)) << what << " recipe " << recipe;
    EXPECT_EQ(a.nll_sum, b.nll_sum) << what << " recipe " << recipe;
    ASSERT_FALSE(a.logits.empty());
  }
}

TEST(LoadMapped, SafetensorsEveryDtype) {
  const LlamaModel m = test::random_model(config(), 7, /*tied=*/false);
  const std::string dir = test::temp_dir("mapped_st");
  for (auto [dt, name] : {std::pair{test::StDtype::f32, "f32"}, {test::StDtype::f16, "f16"}, {test::StDtype::bf16, "bf16"}}) {
    test::write_safetensors(dir + "/" + name, m, dt);
    check_file(dir + "/" + name, std::string("safetensors ") + name);
  }
  std::filesystem::remove_all(dir);
}

TEST(LoadMapped, GgufEveryType) {
  const LlamaModel m = test::random_model(config(), 8, /*tied=*/true);
  const std::string dir = test::temp_dir("mapped_gguf");
  for (auto [t, name] : {std::pair{test::GgufType::f32, "f32"}, {test::GgufType::f16, "f16"},
                         {test::GgufType::bf16, "bf16"}, {test::GgufType::q8_0, "q8_0"}}) {
    const std::string path = dir + "/" + name + ".gguf";
    test::write_gguf(path, m, t);
    check_file(path, std::string("gguf ") + name);
  }
  std::filesystem::remove_all(dir);
}

// llama.cpp's own K and IQ files (../shared/gguf): the blocks stay in the file, widened a panel
// at a time inside the GEMM, and give the widening loader's weights and logits bit for bit.
TEST(LoadMapped, GgufBlockTypesFromLlamaCpp) {
  const std::string dir = test::shared_path("gguf");
  if (!std::filesystem::exists(dir + "/modelA-Q4_K_M.gguf")) GTEST_SKIP() << "../shared/gguf (llama.cpp's model A files) is absent";
  for (const char* file : {"modelA-Q4_K_M.gguf", "modelA-IQ4_XS.gguf"}) {
    const std::string path = dir + "/" + file;
    const LlamaModel widened = load_model(path), mapped = load_model(path, WeightStorage::mapped);
    ASSERT_TRUE(mapped.mapped) << file;
    EXPECT_EQ(mapped.layers[0].wq.stored.type, quant::StoredType::custom) << file << ": the blocks were not kept";
    EXPECT_TRUE(mapped.layers[0].wq.empty() && mapped.token_embedding.empty()) << file << ": weights were copied";
    LlamaModel copy = mapped;
    widen_mapped(copy);
    expect_same_weights(widened, copy, file);

    std::vector<int> tokens(24);
    for (std::size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = static_cast<int>((i * 131 + 7) % static_cast<std::size_t>(widened.config.vocab_size));
    EvalOptions opt;
    opt.keep_logits = true;
    for (const char* recipe : {"fp32", "mxfp4"}) {
      const Recipe r = find_recipe(recipe);
      const EvalRun a = evaluate(widened, tokens, r, opt), b = evaluate(mapped, tokens, r, opt);
      ASSERT_FALSE(a.logits.empty());
      EXPECT_TRUE(same_bits(a.logits, b.logits)) << file << " recipe " << recipe;
      EXPECT_EQ(a.nll_sum, b.nll_sum) << file << " recipe " << recipe;
    }
  }
}

TEST(LoadMapped, BadTokenIsAnErrorNotARead) {
  const LlamaModel m = test::random_model(config(), 9);
  const std::string dir = test::temp_dir("mapped_bad");
  test::write_safetensors(dir + "/m", m, test::StDtype::bf16);
  const LlamaModel mapped = load_model(dir + "/m", WeightStorage::mapped);
  const std::vector<int> tokens = {1, 80, 2};
  EXPECT_THROW(evaluate(mapped, tokens, find_recipe("fp32")), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lowp::accuracy
