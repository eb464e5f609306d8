// One transformer block of the Llama (private to lowp_accuracy), for a window of tokens, for one
// decode step and for a training batch alike, with the KV cache passed in (as llama.cpp's
// llm_build_kv and llama2.c's forward(token, pos)):
//   x += attention(rmsnorm(x))   q,k,v = linears (+ biases); QK-norm (Qwen3: each head of q and k
//                                RMSNorm-ed); RoPE; the recipe's points; K, V -> the
//                                cache; causal GQA softmax(QK^T/sqrt(hd)) V; o-proj (+ bias)
//   x += ffn(rmsnorm(x))         down(silu(gate(x)) * up(x))
// What its callers differ in is a BlockOps: the linears (evaluation's prepared GEMMs, training's
// QuantLinears), and evaluation's quantization points, rotations and finiteness checks, each a
// call at the place it acts (no-ops in training). forward_window (model/forward.cpp) runs it on T
// rows from position 0; the Decoder (model/decoder.cpp) on one row at its position, so a step
// gives the bits its row has in the window; TrainLlama (train/llama_train.cpp) on B sequences
// without a cache, keeping what its backward reads.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "model/attention.hpp"

namespace lowp::accuracy::detail {

// A KV cache of `layers` layers: per layer and KV head, `capacity` positions x head_dim of K and
// the same of V, as the attention reads them (after RoPE, the head rotation and the kv.k/kv.v,
// k and v points).
class KvCache {
 public:
  KvCache() = default;
  KvCache(std::size_t layers, std::size_t kv_heads, std::size_t head_dim, std::size_t capacity);
  KvLayer layer(std::size_t l);

 private:
  std::size_t per_layer_ = 0, capacity_ = 0;
  std::vector<float> k_, v_;
};

// Evaluation's quantization points inside the block (their specs are the recipe's, per layer).
enum class BlockPoint { kv_k, kv_v, q, k, v };

// What block_forward's caller brings.
class BlockOps {
 public:
  // Layer l's gains and biases (a bias span empty: none).
  struct Weights {
    const float *attn_norm = nullptr, *ffn_norm = nullptr;
    std::span<const float> bq, bk, bv, bo;
    const float *q_norm = nullptr, *k_norm = nullptr;  // QK-norm's gains over a head (null: none)
  };
  // g and u of rows x hidden each, `stride` floats from one row to the next.
  struct GateUp {
    const float *g = nullptr, *u = nullptr;
    std::size_t stride = 0;
  };

  virtual ~BlockOps() = default;
  virtual const LlamaConfig& config() const = 0;
  virtual int threads() const = 0;
  virtual Weights weights(int l) const = 0;
  // RoPE tables from position 0 (rope_tables, model/layers.hpp).
  virtual const float* rope_cos() const = 0;
  virtual const float* rope_sin() const = 0;

  // The linears on `rows` rows: q, k, v (rows x q_dim, kv_dim, kv_dim) = xn Wq^T, Wk^T, Wv^T;
  // out = att Wo^T; gate and up of xn (where the caller keeps them); out = h Wdown^T.
  virtual void qkv(int l, const float* xn, std::size_t rows, float* q, float* k, float* v) = 0;
  virtual void wo(int l, const float* att, std::size_t rows, float* out) = 0;
  virtual GateUp gate_up(int l, const float* xn, std::size_t rows) = 0;
  virtual void down(int l, const float* h, std::size_t rows, float* out) = 0;

  // Evaluation's (none in training): the head rotation of q, k (and v) (HadaCore / FA3) and its
  // inverse on the attention output; x <- the point's fake quantization (its error recorded);
  // attn.p's hook (then p_done, once the attention has run); QuaRot's online Hadamard before
  // down_proj; the float32 reference's check of a tensor (rows x cols) for NaN/Inf.
  virtual void rotate_heads(float*, float*, float*, std::size_t) {}
  virtual void unrotate_v(float*, std::size_t) {}
  virtual void point(int, BlockPoint, float*, std::size_t, std::size_t) {}
  virtual AttentionP p_point(int, std::size_t, std::size_t) { return {}; }
  virtual void p_done() {}
  virtual void rotate_down(float*, std::size_t) {}
  virtual void finite(const float*, std::size_t, int, const std::string&, std::size_t) const {}
};

// Where block_forward leaves its tensors: scratch reused from call to call (evaluation), or a
// layer's own (training), which then also keeps the residual stream entering each half, the
// norms' 1/rms and P (`keep`).
struct BlockActs {
  std::vector<float> xn1, q, k, v, att, out, xn2, h;
  bool keep = false;
  std::vector<float> x_in, inv1, p, x_mid, inv2;
  std::vector<float> q_pre, k_pre, invq, invk;  // QK-norm's inputs and 1/rms per head
};

// The rows block_forward runs: B sequences of T tokens at positions pos0 .. pos0 + T - 1. With
// caches (cache[b] for sequence b), sequence b's K and V go to its cache rows [pos0, pos0 + T)
// and its queries attend over cache rows [0, pos0 + T): a window is T tokens from pos0 = 0, a
// decode step T = 1 at pos, sensitivity's stacked windows B of them. Without (training), each
// sequence attends over its own K and V (pos0 = 0).
struct BlockRows {
  std::size_t B = 1, T = 0, pos0 = 0;
  const KvLayer* cache = nullptr;  // B of them, or none
};

// Layer l on x (B*T x dim, the residual stream), in place.
void block_forward(BlockOps& ops, int l, float* x, const BlockRows& r, BlockActs& a);

}  // namespace lowp::accuracy::detail
