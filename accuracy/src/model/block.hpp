// One transformer block of the prepared Llama (private to lowp_accuracy), for a window of tokens
// and for one decode step alike, with the KV cache passed in (as llama.cpp's llm_build_kv and
// llama2.c's forward(token, pos)):
//   x += attention(rmsnorm(x))   q,k,v = linears; RoPE; the recipe's points; K, V -> the cache;
//                                causal GQA softmax(QK^T/sqrt(hd)) V over the cache; o-proj
//   x += ffn(rmsnorm(x))         down(silu(gate(x)) * up(x))
// Every quantization point is a quantize_point(...) call at the place it acts. forward_window
// (model/forward.cpp) runs it on T rows from position 0; the Decoder (model/decoder.cpp) on one
// row at its position, so a step gives the bits its row has in the window.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "model/attention.hpp"
#include "model/llama.hpp"

namespace lowp::accuracy::detail {

// A KV cache of `layers` layers: per layer and KV head, `capacity` positions x head_dim of K and
// the same of V, as the attention reads them (after RoPE, the head rotation and the kv.k/kv.v,
// k and v points).
class KvCache {
 public:
  KvCache() = default;
  KvCache(std::size_t layers, std::size_t kv_heads, std::size_t head_dim, std::size_t capacity);
  KvLayer layer(std::size_t l);
  std::size_t capacity() const { return capacity_; }

 private:
  std::size_t per_layer_ = 0, capacity_ = 0;
  std::vector<float> k_, v_;
};

// One call's tensors (rows x their width), kept by the caller from call to call.
struct BlockScratch {
  std::vector<float> xb, qkv, q, k, v, att, out, gu, hb;
};

// x = the embedding rows of `tokens` (rows x dim).
void embed(ForwardOps& ops, std::span<const int> tokens, float* x);

// Layer l on x (rows x dim: the residual stream of the tokens at positions pos0 .. pos0 + rows - 1),
// in place. Their K and V rows go to cache rows [pos0, pos0 + rows) and their queries attend over
// cache rows [0, pos0 + rows). A window: rows = T from pos0 = 0; a decode step: rows = 1 at pos.
void block_forward(ForwardOps& ops, int l, float* x, std::size_t rows, std::size_t pos0, const KvLayer& cache,
                   BlockScratch& s);

// logits of rows [first, rows) of x (rows x dim, the residual stream after the last layer):
// the final RMSNorm, then the classifier (rows before `first` are left untouched).
void head_forward(ForwardOps& ops, const float* x, std::size_t rows, std::size_t first, float* logits,
                  BlockScratch& s);

}  // namespace lowp::accuracy::detail
