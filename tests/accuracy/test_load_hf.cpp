// Hugging Face checkpoints as they come: the config.json of Llama-3.2-1B, Llama-3.1-8B,
// Mistral-7B, Mistral-Nemo and Qwen2-0.5B (every key as published; only the sizes shrunk so
// the weights, written here at random, stay small), in BF16 / F16 / F32, sharded with an
// index, tied or not, with Llama 3 and linear RoPE scaling, head_dim != hidden / heads and
// Qwen2's q/k/v biases. The evaluator's logits are checked against a float64 forward over the
// HF tensors themselves (llama_reference.hpp's ReferenceHf).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <span>
#include <filesystem>
#include <map>
#include <random>

#include "llama_reference.hpp"
#include "llama_test_util.hpp"
#include "lowp/accuracy/decoder.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/numerics/half.hpp"
#include "lowp/quant/linear.hpp"
#include "model_files.hpp"
#include "io/save_model.hpp"
#include "train/llama_train.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

struct HfTensor {
  std::vector<std::uint64_t> shape;
  std::vector<float> data;
};
using HfTensors = std::map<std::string, HfTensor>;

// Random HF-layout tensors for `s`, already rounded to `dt` so the file holds them exactly.
HfTensors random_tensors(const HfSpec& s, StDtype dt, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto round = [&](float x) {
    if (dt == StDtype::bf16) return lowp::bf16_to_f32(lowp::f32_to_bf16(x));
    if (dt == StDtype::f16) return lowp::f16_to_f32(lowp::f32_to_f16(x));
    return x;
  };
  HfTensors ts;
  const auto add = [&](const std::string& n, std::vector<std::uint64_t> shape, float mean, float sd) {
    std::uint64_t count = 1;
    for (auto d : shape) count *= d;
    HfTensor t{shape, std::vector<float>(count)};
    for (float& x : t.data) x = round(mean + sd * nd(gen));
    ts[n] = std::move(t);
  };
  const std::uint64_t D = s.dim, F = s.hidden, qd = static_cast<std::uint64_t>(s.heads) * s.head_dim,
                      kvd = static_cast<std::uint64_t>(s.kv_heads) * s.head_dim, V = s.vocab;
  const float sd = 1.0f / std::sqrt(static_cast<float>(D));
  add("model.embed_tokens.weight", {V, D}, 0, 1);
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {D}, 1, 0.1f);
    add(p + "self_attn.q_proj.weight", {qd, D}, 0, sd);
    add(p + "self_attn.k_proj.weight", {kvd, D}, 0, sd);
    add(p + "self_attn.v_proj.weight", {kvd, D}, 0, sd);
    add(p + "self_attn.o_proj.weight", {D, qd}, 0, 1.0f / std::sqrt(static_cast<float>(qd)));
    if (s.qkv_bias) {
      add(p + "self_attn.q_proj.bias", {qd}, 0, 0.5f);
      add(p + "self_attn.k_proj.bias", {kvd}, 0, 0.5f);
      add(p + "self_attn.v_proj.bias", {kvd}, 0, 0.5f);
    }
    if (s.o_bias) add(p + "self_attn.o_proj.bias", {D}, 0, 0.5f);
    if (s.qk_norm) {  // gains far from 1 and from each other: a permuted or skipped gain shows
      add(p + "self_attn.q_norm.weight", {static_cast<std::uint64_t>(s.head_dim)}, 1, 0.4f);
      add(p + "self_attn.k_norm.weight", {static_cast<std::uint64_t>(s.head_dim)}, 1, 0.4f);
    }
    add(p + "post_attention_layernorm.weight", {D}, 1, 0.1f);
    add(p + "mlp.gate_proj.weight", {F, D}, 0, sd);
    add(p + "mlp.up_proj.weight", {F, D}, 0, sd);
    add(p + "mlp.down_proj.weight", {D, F}, 0, 1.0f / std::sqrt(static_cast<float>(F)));
  }
  add("model.norm.weight", {D}, 1, 0.1f);
  if (!s.tied) add("lm_head.weight", {V, D}, 0, 3 * sd);
  return ts;
}

std::vector<std::uint8_t> st_bytes(const HfTensors& ts, const std::vector<std::string>& names, StDtype dt) {
  const char* dname = dt == StDtype::f32 ? "F32" : dt == StDtype::f16 ? "F16" : "BF16";
  ByteSink data;
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  for (const std::string& n : names) {
    const HfTensor& t = ts.at(n);
    const std::size_t begin = data.b.size();
    for (float x : t.data) {
      if (dt == StDtype::f32) data.put(x);
      if (dt == StDtype::f16) data.put(lowp::f32_to_f16(x));
      if (dt == StDtype::bf16) data.put(lowp::f32_to_bf16(x));
    }
    std::string shape = "[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) shape.append(i ? ", " : "").append(std::to_string(t.shape[i]));
    shape.append("]");
    header.append(",\"").append(n).append("\":{\"dtype\":\"").append(dname).append("\",\"shape\":").append(shape);
    header.append(",\"data_offsets\":[").append(std::to_string(begin)).append(",").append(std::to_string(data.b.size()));
    header.append("]}");
  }
  header += "}";
  ByteSink s;
  s.put<std::uint64_t>(header.size());
  s.put_bytes(header.data(), header.size());
  s.put_bytes(data.b.data(), data.b.size());
  return s.b;
}

// Writes config.json and the tensors: one model.safetensors, or `shards` files with
// model.safetensors.index.json as transformers' save_pretrained names them.
void write_hf(const std::string& dir, const std::string& config, const HfTensors& ts, StDtype dt, int shards = 1) {
  std::filesystem::create_directories(dir);
  write_text(dir + "/config.json", config);
  std::vector<std::string> names;
  for (const auto& [n, t] : ts) names.push_back(n);
  if (shards == 1) {
    write_file(dir + "/model.safetensors", st_bytes(ts, names, dt));
    return;
  }
  std::string index = "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {";
  for (int k = 0; k < shards; ++k) {
    char file[64];
    std::snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", k + 1, shards);
    std::vector<std::string> part;
    for (std::size_t i = k; i < names.size(); i += static_cast<std::size_t>(shards)) {
      part.push_back(names[i]);
      index.append(index.back() == '{' ? "" : ", ").append("\"").append(names[i]).append("\": \"").append(file).append("\"");
    }
    write_file(dir + "/" + file, st_bytes(ts, part, dt));
  }
  write_text(dir + "/model.safetensors.index.json", index + "}}");
}

struct HfCase {
  const char* name;
  HfSpec spec;
  std::string config;
  StDtype dtype;
  int shards;
};

// The published configs with the sizes replaced (real values in the comments).
std::vector<HfCase> cases() {
  std::vector<HfCase> cs;
  {  // meta-llama/Llama-3.2-1B: hidden 2048, 32 heads / 8 KV, head_dim 64, 16 layers, vocab 128256
    HfSpec s{256, 512, 2, 4, 1, 64, 160, 1e-5, 500000.0, "llama3", 32.0, 1.0, 4.0, 8192, true, false, false, false};
    cs.push_back({"Llama-3.2-1B", s,
                  R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 256,
  "initializer_range": 0.02, "intermediate_size": 512, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 1,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
  "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0",
  "use_cache": true, "vocab_size": 160})",
                  StDtype::bf16, 1});
  }
  {  // meta-llama/Llama-3.1-8B: hidden 4096, 32 heads / 8 KV, 32 layers, 14336, vocab 128256, original
     // context 8192. Here original_max_position_embeddings is 64 so that all three frequency bands
     // (kept, interpolated, divided by the factor) turn within the test's 32 positions.
    HfSpec s{64, 160, 2, 4, 1, 16, 96, 1e-5, 500000.0, "llama3", 8.0, 1.0, 4.0, 64, false, false, false, false};
    cs.push_back({"Llama-3.1-8B", s,
                  R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 64, "initializer_range": 0.02,
  "intermediate_size": 160, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 1, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64,
  "rope_type": "llama3"}, "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 96})",
                  StDtype::bf16, 3});
  }
  {  // mistralai/Mistral-7B-v0.1: hidden 4096, 32 heads / 8 KV, 32 layers, 14336, vocab 32000
    HfSpec s{64, 160, 2, 4, 1, 16, 96, 1e-5, 10000.0, "none", 1, 1, 4, 0, false, false, false, false};
    cs.push_back({"Mistral-7B", s,
                  R"({"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
  "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 160, "max_position_embeddings": 32768,
  "model_type": "mistral", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 1,
  "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 96})",
                  StDtype::f16, 1});
  }
  {  // mistralai/Mistral-Nemo-Base-2407: hidden 5120, 32 heads of head_dim 128 (4096 != 5120), 8 KV
    HfSpec s{80, 160, 2, 4, 2, 32, 96, 1e-5, 1000000.0, "linear", 4.0, 1, 4, 0, false, false, false, false};
    cs.push_back({"Mistral-Nemo (head_dim 32 != 80 / 4, linear RoPE scaling)", s,
                  R"({"architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "head_dim": 32, "hidden_act": "silu", "hidden_size": 80, "initializer_range": 0.02, "intermediate_size": 160,
  "max_position_embeddings": 1024000, "model_type": "mistral", "num_attention_heads": 4, "num_hidden_layers": 2,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-05, "rope_scaling": {"type": "linear", "factor": 4.0},
  "rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 96})",
                  StDtype::f32, 2});
  }
  {  // Qwen/Qwen2-0.5B: hidden 896, 14 heads / 2 KV (head_dim 64), 24 layers, 4864, vocab 151936, q/k/v biases
    HfSpec s{112, 192, 2, 7, 1, 16, 128, 1e-6, 1000000.0, "none", 1, 1, 4, 0, true, true, false, false};
    cs.push_back({"Qwen2-0.5B", s,
                  R"({"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 112, "initializer_range": 0.02, "intermediate_size": 192,
  "max_position_embeddings": 131072, "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 7,
  "num_hidden_layers": 2, "num_key_value_heads": 1, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 131072, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.40.1",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 128})",
                  StDtype::bf16, 1});
  }
  {  // Qwen/Qwen3-0.6B: hidden 1024, 16 heads / 8 KV of head_dim 128 (2048 != 1024), 28 layers, 3072,
     // vocab 151936, QK-norm (q_norm, k_norm over each head), no biases
    HfSpec s{64, 96, 2, 4, 2, 32, 128, 1e-6, 1000000.0, "none", 1, 1, 4, 0, true, false, false, true};
    cs.push_back({"Qwen3-0.6B (QK-norm)", s,
                  R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 32, "hidden_act": "silu", "hidden_size": 64,
  "initializer_range": 0.02, "intermediate_size": 96, "max_position_embeddings": 40960, "max_window_layers": 28,
  "model_type": "qwen3", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 128})",
                  StDtype::bf16, 1});
  }
  return cs;
}

TEST(LoadHf, PublishedConfigsMatchFloat64Forward) {
  const std::string root = temp_dir("hf_configs");
  std::uint32_t seed = 100;
  for (const HfCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const HfTensors ts = random_tensors(c.spec, c.dtype, seed++);
    const std::string dir = root + "/" + std::to_string(seed);
    write_hf(dir, c.config, ts, c.dtype, c.shards);
    const LlamaModel m = load_model(dir);
    EXPECT_EQ(m.config.head_dim(), c.spec.head_dim);
    EXPECT_EQ(m.classifier.empty(), c.spec.tied);
    const auto tokens = random_tokens(32, c.spec.vocab, seed);
    EvalOptions opt;
    opt.keep_logits = true;
    opt.score_all = true;
    const EvalRun run = evaluate(m, tokens, find_recipe("fp32"), opt);
    const ReferenceHf ref(c.spec, [&](const std::string& name) -> const std::vector<float>& { return ts.at(name).data; });
    const auto want = ref.run(tokens);
    ASSERT_EQ(run.logits.size(), want.size());
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(run.logits[i] - want[i]));
      scale = std::max(scale, std::abs(want[i]));
    }
    EXPECT_LE(worst, 2e-5 * std::max(1.0, scale)) << "largest logit " << scale;
    EXPECT_GT(scale, 1.0);  // not a vacuous comparison
    // Kept mapped (q/k through row maps, q_dim-shaped views), the logits are the same bits.
    const LlamaModel mapped = load_model(dir, WeightStorage::mapped);
    ASSERT_TRUE(mapped.mapped);
    EXPECT_TRUE(evaluate(mapped, tokens, find_recipe("fp32"), opt).logits == run.logits);
  }
  std::filesystem::remove_all(root);
}

// The loader's llama3 factors at the published Llama-3.2-1B values (head_dim 64, theta 5e5,
// factor 32, bands 1..4 of 8192) against transformers' inverse frequencies.
TEST(LoadHf, Llama3RopeFactorsAtPublishedValues) {
  const HfCase c = cases()[0];
  const std::string dir = temp_dir("hf_llama3");
  write_hf(dir, c.config, random_tensors(c.spec, c.dtype, 7), c.dtype);
  const LlamaModel m = load_model(dir);
  ASSERT_EQ(m.config.rope_freq_factors.size(), 32u);
  const auto freq = ReferenceHf(c.spec, {}).inv_freq();
  int kept = 0, divided = 0, smoothed = 0;
  for (std::size_t i = 0; i < 32; ++i) {
    const double base = std::pow(500000.0, -2.0 * static_cast<double>(i) / 64);
    const double got = base / m.config.rope_freq_factors[i];
    EXPECT_NEAR(got / freq[i], 1.0, 1e-6) << i;
    const double ratio = base / freq[i];
    (ratio == 1.0 ? kept : std::abs(ratio - 32) < 1e-9 ? divided : smoothed)++;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(smoothed, 0);
  std::filesystem::remove_all(dir);
}

TEST(LoadHf, BadConfigsAndShards) {
  const HfCase c = cases()[1];
  const HfTensors ts = random_tensors(c.spec, c.dtype, 9);
  const std::string dir = temp_dir("hf_bad");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = c.config;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  write_hf(dir, with("\"rope_type\": \"llama3\"", "\"rope_type\": \"yarn\""), ts, c.dtype, 3);
  expect_error([&] { load_model(dir); }, {"config.json", "rope_scaling type 'yarn' is not supported"});
  write_hf(dir, with("\"low_freq_factor\": 1.0, ", ""), ts, c.dtype, 3);
  expect_error([&] { load_model(dir); }, {"config.json", "rope_scaling.low_freq_factor is missing"});
  write_hf(dir, with("\"model_type\": \"llama\"", "\"model_type\": \"gemma\""), ts, c.dtype, 3);
  expect_error([&] { load_model(dir); }, {"config.json", "model_type 'gemma' is not supported"});
  write_hf(dir, with("\"mlp_bias\": false", "\"mlp_bias\": true"), ts, c.dtype, 3);
  expect_error([&] { load_model(dir); }, {"config.json", "mlp_bias is not supported"});
  write_hf(dir, with("\"attention_bias\": false", "\"attention_bias\": true"), ts, c.dtype, 3);
  expect_error([&] { load_model(dir); }, {"tensor 'model.layers.0.self_attn.q_proj.bias' is missing"});
  // The index names a shard that does not hold the tensor, or one that does not exist.
  write_hf(dir, c.config, ts, c.dtype, 3);
  ASSERT_NO_THROW(load_model(dir));
  std::filesystem::rename(dir + "/model-00002-of-00003.safetensors", dir + "/x.safetensors");
  expect_error([&] { load_model(dir); }, {"model.safetensors.index.json", "shard 'model-00002-of-00003.safetensors'", "does not exist"});
  std::filesystem::copy_file(dir + "/model-00001-of-00003.safetensors", dir + "/model-00002-of-00003.safetensors");
  EXPECT_THROW(load_model(dir), lowp::Error);
  std::filesystem::remove_all(dir);
}

// --- the same models as llama.cpp's convert_hf_to_gguf.py writes them ----------------------

// HF rows of a llama's q/k as the converter permutes them: row (h, half, j) of the HF tensor
// becomes row (h, j, half), i.e. pairs (2j, 2j+1) hold rotate-half's (j, j + hd/2).
std::vector<float> converter_permute(const std::vector<float>& w, int heads, int hd) {
  const std::size_t cols = w.size() / static_cast<std::size_t>(heads * hd);
  std::vector<float> out(w.size());
  for (int h = 0; h < heads; ++h)
    for (int half = 0; half < 2; ++half)
      for (int j = 0; j < hd / 2; ++j) {
        const std::size_t from = static_cast<std::size_t>(h * hd + half * hd / 2 + j), to = static_cast<std::size_t>(h * hd + 2 * j + half);
        std::copy_n(&w[from * cols], cols, &out[to * cols]);
      }
  return out;
}

std::vector<std::uint8_t> gguf_from_hf(const HfSpec& sp, const HfTensors& ts, const std::string& arch, bool f16) {
  struct T {
    std::string name;
    std::vector<float> data;
    std::vector<std::uint64_t> ne;
  };
  std::vector<T> out;
  const bool llama = arch == "llama";
  auto add = [&](const std::string& gname, const std::string& hname, int permute_heads = 0) {
    const HfTensor& t = ts.at(hname);
    std::vector<float> d = permute_heads && llama ? converter_permute(t.data, permute_heads, sp.head_dim) : t.data;
    std::vector<std::uint64_t> ne(t.shape.rbegin(), t.shape.rend());  // GGUF lists ne0 (columns) first
    out.push_back({gname, std::move(d), ne});
  };
  add("token_embd.weight", "model.embed_tokens.weight");
  for (int l = 0; l < sp.layers; ++l) {
    const std::string h = "model.layers." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
    add(g + "attn_norm.weight", h + "input_layernorm.weight");
    add(g + "attn_q.weight", h + "self_attn.q_proj.weight", sp.heads);
    add(g + "attn_k.weight", h + "self_attn.k_proj.weight", sp.kv_heads);
    add(g + "attn_v.weight", h + "self_attn.v_proj.weight");
    add(g + "attn_output.weight", h + "self_attn.o_proj.weight");
    if (sp.qk_norm) {  // one head of gains, permuted like a head's rows for a llama
      add(g + "attn_q_norm.weight", h + "self_attn.q_norm.weight", 1);
      add(g + "attn_k_norm.weight", h + "self_attn.k_norm.weight", 1);
    }
    if (sp.qkv_bias) {
      add(g + "attn_q.bias", h + "self_attn.q_proj.bias", sp.heads);
      add(g + "attn_k.bias", h + "self_attn.k_proj.bias", sp.kv_heads);
      add(g + "attn_v.bias", h + "self_attn.v_proj.bias");
    }
    add(g + "ffn_norm.weight", h + "post_attention_layernorm.weight");
    add(g + "ffn_gate.weight", h + "mlp.gate_proj.weight");
    add(g + "ffn_up.weight", h + "mlp.up_proj.weight");
    add(g + "ffn_down.weight", h + "mlp.down_proj.weight");
  }
  add("output_norm.weight", "model.norm.weight");
  if (!sp.tied) add("output.weight", "lm_head.weight");
  if (sp.scaling == "llama3") {  // the converter's rope_freqs: base frequency / scaled frequency
    const auto f = ReferenceHf(sp, {}).inv_freq();
    std::vector<float> factors(f.size());
    for (std::size_t i = 0; i < f.size(); ++i)
      factors[i] = static_cast<float>(std::pow(sp.theta, -2.0 * static_cast<double>(i) / sp.head_dim) / f[i]);
    out.push_back({"rope_freqs.weight", factors, {factors.size()}});
  }

  ByteSink s;
  s.put_bytes("GGUF", 4);
  s.put<std::uint32_t>(3);
  s.put<std::uint64_t>(out.size());
  ByteSink kvs;
  std::uint64_t n_kv = 0;
  auto key = [&](const std::string& k, std::uint32_t type) {
    gguf_string(kvs, k);
    kvs.put(type);
    ++n_kv;
  };
  auto u32 = [&](const std::string& k, std::uint32_t v) { key(arch + "." + k, 4); kvs.put(v); };
  auto f32 = [&](const std::string& k, float v) { key(arch + "." + k, 6); kvs.put(v); };
  key("general.architecture", 8);
  gguf_string(kvs, arch);
  u32("context_length", 4096);
  u32("embedding_length", sp.dim);
  u32("feed_forward_length", sp.hidden);
  u32("block_count", sp.layers);
  u32("attention.head_count", sp.heads);
  u32("attention.head_count_kv", sp.kv_heads);
  u32("attention.key_length", sp.head_dim);
  u32("attention.value_length", sp.head_dim);
  u32("rope.dimension_count", sp.head_dim);
  f32("rope.freq_base", static_cast<float>(sp.theta));
  f32("attention.layer_norm_rms_epsilon", static_cast<float>(sp.eps));
  if (sp.scaling == "linear") {
    key(arch + ".rope.scaling.type", 8);
    gguf_string(kvs, "linear");
    f32("rope.scaling.factor", static_cast<float>(sp.factor));
  }
  s.put(n_kv);
  s.put_bytes(kvs.b.data(), kvs.b.size());
  std::vector<ByteSink> datas;
  std::uint64_t offset = 0;
  for (const T& t : out) {
    const bool half = f16 && t.ne.size() == 2;  // the converter keeps 1-D tensors in F32
    ByteSink d;
    for (float x : t.data) {
      if (half) d.put(lowp::f32_to_f16(x));
      else d.put(x);
    }
    gguf_string(s, t.name);
    s.put<std::uint32_t>(static_cast<std::uint32_t>(t.ne.size()));
    for (auto e : t.ne) s.put<std::uint64_t>(e);
    s.put<std::uint32_t>(half ? 1 : 0);
    s.put<std::uint64_t>(offset);
    offset = (offset + d.b.size() + 31) / 32 * 32;
    datas.push_back(std::move(d));
  }
  s.pad_to(32);
  for (auto& d : datas) {
    s.put_bytes(d.b.data(), d.b.size());
    s.pad_to(32);
  }
  return s.b;
}

// GGUF metadata carries the same: rope.freq_base, rope_freqs.weight (Llama 3), rope.scaling.*
// (linear), attention.key_length (head_dim), and qwen2's biases in rotate-half order.
TEST(LoadHf, SameModelsFromGguf) {
  const std::string dir = temp_dir("hf_gguf");
  const auto cs = cases();
  std::uint32_t seed = 300;
  for (const auto& [index, arch] : std::vector<std::pair<int, std::string>>{{1, "llama"}, {3, "llama"}, {4, "qwen2"}, {5, "qwen3"}}) {
    const HfCase& c = cs[static_cast<std::size_t>(index)];
    SCOPED_TRACE(c.name);
    // F16 GGUFs of F16-exact tensors (bf16 values with a wide exponent are not) keep them exactly.
    const StDtype dt = index == 3 ? StDtype::f16 : c.dtype;
    const HfTensors ts = random_tensors(c.spec, dt, seed++);
    write_file(dir + "/m.gguf", gguf_from_hf(c.spec, ts, arch, dt == StDtype::f16));
    const LlamaModel m = load_model(dir + "/m.gguf");
    EXPECT_EQ(m.config.head_dim(), c.spec.head_dim);
    EXPECT_EQ(m.config.rope_freq_factors.empty(), c.spec.scaling != "llama3");
    const auto tokens = random_tokens(32, c.spec.vocab, seed);
    EvalOptions opt;
    opt.keep_logits = true;
    opt.score_all = true;
    const EvalRun run = evaluate(m, tokens, find_recipe("fp32"), opt);
    const auto want = ReferenceHf(c.spec, [&](const std::string& n) -> const std::vector<float>& { return ts.at(n).data; }).run(tokens);
    ASSERT_EQ(run.logits.size(), want.size());
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(run.logits[i] - want[i]));
      scale = std::max(scale, std::abs(want[i]));
    }
    EXPECT_LE(worst, 2e-5 * std::max(1.0, scale)) << "largest logit " << scale;
    const LlamaModel mapped = load_model(dir + "/m.gguf", WeightStorage::mapped);
    ASSERT_TRUE(mapped.mapped);
    EXPECT_TRUE(evaluate(mapped, tokens, find_recipe("fp32"), opt).logits == run.logits);
  }
  std::filesystem::remove_all(dir);
}

// QK-norm (Qwen3) in the decode step: every position's logits bitwise those of evaluate() over
// the prefix, with the plain float32 recipe and with a KV-cache-quantizing one (the cache holds
// the normed, rotated K).
TEST(LoadHf, QkNormDecodeIsEvaluate) {
  const HfCase c = cases()[5];
  ASSERT_TRUE(c.spec.qk_norm);
  const std::string dir = temp_dir("hf_qk_decode");
  write_hf(dir, c.config, random_tensors(c.spec, c.dtype, 77), c.dtype);
  const LlamaModel m = load_model(dir);
  ASSERT_FALSE(m.layers[0].q_norm.empty());
  const auto tokens = random_tokens(12, c.spec.vocab, 78);
  const std::size_t V = static_cast<std::size_t>(c.spec.vocab);
  for (const char* name : {"fp32", "kv4"}) {
    SCOPED_TRACE(name);
    const Recipe r = find_recipe(name);
    Decoder d(m, r, tokens.size(), 1);
    EvalOptions opt;
    opt.keep_logits = true;
    opt.score_all = true;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      const std::span<const float> got = d.step(tokens[t]);
      const auto prefix = evaluate(m, std::span(tokens).first(t + 1), r, opt).logits;
      ASSERT_EQ(std::memcmp(got.data(), prefix.data() + t * V, V * sizeof(float)), 0) << "position " << t;
    }
  }
  std::filesystem::remove_all(dir);
}

// A QK-norm model written by lowp's savers (GGUF as llama.cpp's qwen3, rotate-half rows; HF as
// Qwen3ForCausalLM) reads back the same weights, bit for bit; llama2.c's format refuses it.
TEST(LoadHf, QkNormSavedAndReloaded) {
  const HfCase c = cases()[5];
  const std::string dir = temp_dir("hf_qk_save");
  write_hf(dir + "/in", c.config, random_tensors(c.spec, c.dtype, 82), c.dtype);
  const LlamaModel m = load_model(dir + "/in");
  lowp::accuracy::detail::save_gguf(m, dir + "/m.gguf");
  std::filesystem::create_directories(dir + "/out");
  lowp::accuracy::detail::save_safetensors(m, dir + "/out/model.safetensors");
  for (const std::string& path : {dir + "/m.gguf", dir + "/out"}) {
    SCOPED_TRACE(path);
    const LlamaModel back = load_model(path);
    ASSERT_EQ(back.layers.size(), m.layers.size());
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      EXPECT_TRUE(back.layers[l].q_norm == m.layers[l].q_norm) << "layer " << l;
      EXPECT_TRUE(back.layers[l].k_norm == m.layers[l].k_norm) << "layer " << l;
      EXPECT_TRUE(back.layers[l].wq == m.layers[l].wq) << "layer " << l;
      EXPECT_TRUE(back.layers[l].wk == m.layers[l].wk) << "layer " << l;
    }
  }
  LlamaModel plain = make_model(gqa_config(), 83);  // all llama2.c holds, QK-norm added
  for (auto& L : plain.layers) L.q_norm = L.k_norm = std::vector<float>(8, 1.5f);
  EXPECT_EQ(lowp::accuracy::detail::llama2c_cannot_hold(plain), "QK-norm");
  std::filesystem::remove_all(dir);
}

// The training model's QK-norm gain gradients against central differences of the float64 HF
// forward's mean cross-entropy (ReferenceHf over the HF tensors, rotate-half order: gain j of
// the HF tensor is lowp's interleaved 2j for j < head_dim/2, else 2(j - head_dim/2) + 1).
// Tolerance: the float32 forward and backward each round ~10 dependent sums of at most 96 terms
// (gamma_96 ~ 6e-6 relative each), so the gradient is good to ~1e-4 of the tensor's largest
// element; the double central difference (step 1e-4) is good to ~1e-8.
TEST(LoadHf, QkNormGradientMatchesFloat64) {
  const HfCase c = cases()[5];
  const std::string dir = temp_dir("hf_qk_grad");
  HfTensors ts = random_tensors(c.spec, StDtype::f32, 79);
  write_hf(dir, c.config, ts, StDtype::f32);
  const LlamaModel m = load_model(dir);
  const std::size_t T = 8;
  const auto tok = random_tokens(T, c.spec.vocab, 80), tgt = random_tokens(T, c.spec.vocab, 81);
  lowp::accuracy::train::TrainLlama net(m, lowp::quant::linear_preset("fp32"));
  net.forward(tok, tgt, 1, T, 1, 0);
  net.backward(1, 0);
  const auto loss = [&]() {
    const auto logits = ReferenceHf(c.spec, [&](const std::string& n) -> const std::vector<float>& { return ts.at(n).data; })
                            .run(tok);
    const std::size_t V = static_cast<std::size_t>(c.spec.vocab);
    double sum = 0;
    for (std::size_t t = 0; t < T; ++t) {
      double mx = -1e300, z = 0;
      for (std::size_t j = 0; j < V; ++j) mx = std::max(mx, logits[t * V + j]);
      for (std::size_t j = 0; j < V; ++j) z += std::exp(logits[t * V + j] - mx);
      sum += std::log(z) + mx - logits[t * V + static_cast<std::size_t>(tgt[t])];
    }
    return sum / static_cast<double>(T);
  };
  const int hd = c.spec.head_dim;
  int checked = 0;
  for (const auto& p : net.params()) {
    for (const char* which : {"q_norm", "k_norm"}) {
      for (int l = 0; l < c.spec.layers; ++l) {
        if (p.name != "layers." + std::to_string(l) + "." + which) continue;
        ASSERT_EQ(p.size, static_cast<std::size_t>(hd));
        std::vector<float>& w = ts.at("model.layers." + std::to_string(l) + ".self_attn." + which + ".weight").data;
        std::vector<double> fd(static_cast<std::size_t>(hd));
        double big = 0;
        for (int j = 0; j < hd; ++j) {
          const float keep = w[static_cast<std::size_t>(j)];
          const double h = 1e-4;
          // The reference reads the float tensors: the step is taken on a value it holds exactly.
          w[static_cast<std::size_t>(j)] = static_cast<float>(keep + h);
          const double up = loss(), hu = static_cast<double>(w[static_cast<std::size_t>(j)]) - keep;
          w[static_cast<std::size_t>(j)] = static_cast<float>(keep - h);
          const double down = loss(), hd2 = keep - static_cast<double>(w[static_cast<std::size_t>(j)]);
          w[static_cast<std::size_t>(j)] = keep;
          fd[static_cast<std::size_t>(j)] = (up - down) / (hu + hd2);
          big = std::max(big, std::abs(fd[static_cast<std::size_t>(j)]));
        }
        EXPECT_GT(big, 1e-4) << p.name << ": a vacuous comparison";
        for (int j = 0; j < hd; ++j) {
          const int i = j < hd / 2 ? 2 * j : 2 * (j - hd / 2) + 1;  // HF gain j is lowp's gain i
          EXPECT_NEAR(p.grad[i], fd[static_cast<std::size_t>(j)], 1e-4 * big + 1e-7) << p.name << " gain " << i;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * c.spec.layers);
  std::filesystem::remove_all(dir);
}

}  // namespace
