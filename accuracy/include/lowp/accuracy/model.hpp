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

struct LayerWeights {
  std::vector<float> attn_norm;  // dim
  std::vector<float> wq;         // q_dim x dim          (n_heads * head_dim rows)
  std::vector<float> wk;         // kv_dim x dim
  std::vector<float> wv;         // kv_dim x dim
  std::vector<float> wo;         // dim x q_dim
  std::vector<float> bq, bk, bv, bo;  // attention biases (Qwen2, attention_bias); empty when absent
  std::vector<float> ffn_norm;   // dim
  std::vector<float> w_gate;     // hidden x dim  (llama2.c w1)
  std::vector<float> w_down;     // dim x hidden  (llama2.c w2)
  std::vector<float> w_up;       // hidden x dim  (llama2.c w3)
};

// The 2-D weights left in the file they came from, in their stored type (bf16, f16, f32, a
// GGUF block type), memory-mapped: gemm_f32 widens them to float32 a panel at a time.
struct MappedLayer {
  quant::StoredMatrix wq, wk, wv, wo, w_gate, w_down, w_up;
};
struct MappedWeights {
  quant::StoredMatrix token_embedding, classifier;  // classifier.data == nullptr: tied
  std::vector<MappedLayer> layers;
  std::shared_ptr<const void> owner;  // the mappings (and row maps) the views point into
};

struct LlamaModel {
  LlamaConfig config;
  std::vector<float> token_embedding;  // vocab x dim
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;       // dim
  std::vector<float> classifier;       // vocab x dim; empty when tied to token_embedding
  std::string source;                  // "llama2c", "gguf" or "safetensors"
  std::string path;                    // the file it was read from (named in errors)
  // Set by a loader asked for WeightStorage::mapped: the 2-D weights are these views and their
  // float vectors above are empty (the norms stay float vectors).
  std::shared_ptr<const MappedWeights> mapped;
  const std::vector<float>& output_weight() const { return classifier.empty() ? token_embedding : classifier; }
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
