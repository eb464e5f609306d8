// A Llama-2/3 model in memory: hyperparameters and float32 weights, whatever file it came from.
//
// Layouts follow llama2.c: every linear weight is out_features x in_features, row-major, so a
// linear layer is y = x W^T. Q and K use the interleaved-pair RoPE convention (pairs
// (2i, 2i+1) of each head rotate together); loaders of Hugging Face checkpoints undo HF's
// rotate-half permutation so all loaders give the same model.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy {

struct LlamaConfig {
  int dim = 0;          // residual width
  int hidden_dim = 0;   // SwiGLU width
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;   // grouped-query attention: n_heads % n_kv_heads == 0
  int vocab_size = 0;
  int seq_len = 0;      // the longest context the model supports
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int head_size = 0;    // per-head width when it is not dim / n_heads (0: dim / n_heads)
  // RoPE frequency of pair i: theta^(-2i/head_dim) * rope_freq_scale / rope_freq_factors[i]
  // (ggml's freq_scale and rope_freqs; Llama 3's rope_scaling becomes the factors).
  float rope_freq_scale = 1.0f;           // linear scaling: 1 / factor
  std::vector<float> rope_freq_factors;   // head_dim / 2 divisors, or empty
  int head_dim() const { return head_size ? head_size : (n_heads ? dim / n_heads : 0); }
  int q_dim() const { return head_dim() * n_heads; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
};

// One tensor of the model: its float32 values held here (the vector), or, for a 2-D weight of a
// model loaded with WeightStorage::mapped, a view of the file's bytes in their stored type
// (`stored`; the vector is then empty). Readers that take either go through matrix().
struct Weight : std::vector<float> {
  using std::vector<float>::vector;
  Weight() = default;
  Weight(std::vector<float> v) : std::vector<float>(std::move(v)) {}  // NOLINT: owned floats
  quant::StoredMatrix stored;  // data != nullptr: mapped
  bool mapped() const { return stored.data != nullptr; }
  bool present() const { return mapped() || !empty(); }
  // The weight as the GEMM reads it, rows x cols: the file's view, or these floats as f32.
  quant::StoredMatrix matrix(std::size_t rows, std::size_t cols) const {
    return mapped() ? stored : quant::StoredMatrix{quant::StoredType::f32, data(), rows, cols};
  }
};

// A layer's tensors; model/tensors.hpp lists them (names in each file format, shapes, inputs).
struct LayerWeights {
  Weight attn_norm;  // dim
  Weight wq;         // q_dim x dim          (n_heads * head_dim rows)
  Weight wk;         // kv_dim x dim
  Weight wv;         // kv_dim x dim
  Weight wo;         // dim x q_dim
  Weight bq, bk, bv, bo;  // attention biases (Qwen2, attention_bias); empty when absent
  // QK-norm (Qwen3): RMSNorm gains over each head of q and of k (head_dim each), applied after
  // the projections (and biases) and before RoPE; empty when absent.
  Weight q_norm, k_norm;
  Weight ffn_norm;   // dim
  Weight w_gate;     // hidden x dim  (llama2.c w1)
  Weight w_down;     // dim x hidden  (llama2.c w2)
  Weight w_up;       // hidden x dim  (llama2.c w3)
};

struct LlamaModel {
  LlamaConfig config;
  Weight token_embedding;  // vocab x dim
  std::vector<LayerWeights> layers;
  Weight final_norm;       // dim
  Weight classifier;       // vocab x dim; absent (empty, not mapped) when tied to token_embedding
  std::string source;      // "llama2c", "gguf" or "safetensors"
  std::string path;        // the file it was read from (named in errors)
  // Set by a loader asked for WeightStorage::mapped: what the 2-D weights' views point into
  // (the file mappings, row orders, widened copies), kept alive with the model.
  std::shared_ptr<const void> mapped;
  bool tied() const { return !classifier.present(); }
  const Weight& output_weight() const { return tied() ? token_embedding : classifier; }
};

// The longest context (seq_len) a model may declare: 2^24, the last integer float32 holds
// with all its neighbours. Tables and buffers are sized by the evaluated window, not by this.
inline constexpr int max_seq_len = 1 << 24;

// Throws lowp::Error with one line naming the file and the problem when the config is
// inconsistent (non-positive sizes, heads not dividing dim, seq_len above max_seq_len, float32
// weights above the memory budget of lowp/accuracy/memory.hpp) or a tensor has the wrong size.
void validate(const LlamaModel& m);
// Widens a mapped model's weights into its float vectors and drops `mapped` (no-op otherwise).
void widen_mapped(LlamaModel& m);
// The config part alone (loaders check it before sizing tensors); `file` names the source.
// `widened`: the weights will be float32 copies, held to the memory budget (mapped weights
// stay in the file's pages, which the kernel can drop).
void validate(const LlamaConfig& c, const std::string& file, bool widened = true);

}  // namespace lowp::accuracy
