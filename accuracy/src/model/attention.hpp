// Causal grouped-query attention, forward and backward (private to lowp_accuracy). One
// implementation for the block (model/block.cpp: evaluation and the decode step over a KV cache,
// training's B sequences keeping P) and training's backward (train/llama_train.cpp).
//
// Shapes, for B sequences of T positions each from position 0 (row r = b * T + t):
//   Q, dQ, out, dout:  [B*T, heads,    head_dim]   (row stride heads * head_dim)
//   K, V, dK, dV:      [B*T, kv_heads, head_dim]   (row stride kv_heads * head_dim)
//   P:                 B*heads*T*T floats          the softmax, T*T per (sequence, head), kept
//                                                  as attention_backward reads it (query blocks,
//                                                  each rows x the keys it sees; zero above the
//                                                  diagonal; the tail of the T*T unused)
// Head h reads KV head h / (heads / kv_heads). Per (sequence, head):
//   S = Q_h K_g^T / sqrt(head_dim), P = softmax over positions <= t, out_h = P V_g.
#pragma once
#include <cstddef>
#include <functional>

#include "lowp/numerics/cpu.hpp"

namespace lowp::accuracy::detail {

struct AttentionShape {
  std::size_t B = 1, T = 0, heads = 0, kv_heads = 0, head_dim = 0;
};

// A KV cache's layer (model/block.hpp fills it): per KV head, `capacity` rows of head_dim K
// values, the same for V (head g's rows at k + g * capacity * head_dim).
struct KvLayer {
  float *k = nullptr, *v = nullptr;
  std::size_t capacity = 0;
};

// What evaluation does to P before P V (training leaves it empty).
struct AttentionP {
  // Called on each (sequence, head)'s P (T x T; job = b * heads + h) from a worker thread: it
  // must touch only `p` and state of its own job.
  std::function<void(std::size_t job, float* p)> quantize;
  // FlashAttention-3's P (attn.p_form = fa3): P holds the unnormalized exp(S - rowmax) times
  // 2^8 when quantized, and each output row is divided by its row sum times 2^8 after P V.
  bool fa3 = false;
};

// One causal row of raw scores s[0, n) (q.k, unscaled), in place: s[j] = e^(scale (s[j] - max));
// returns their sum, and divides by it when `normalize`. The max and the sum are 8-lane
// reductions (lane j % 8) combined in a fixed order; the exp is model/exp.hpp's. attention_forward
// uses it for every row, so a one-query step (a KV-cache decoder) calling it on the same scores
// gets the same P.
float softmax_row(float* s, std::size_t n, float scale, bool normalize);
// The same with the loop built for `isa` (AVX-512's copy, or the baseline build's for any other):
// the same bits.
float softmax_row(float* s, std::size_t n, float scale, bool normalize, Isa isa);

// P's row as evaluation forms it: the normalized softmax_row, or under FlashAttention-3's form
// (attn.p_form = fa3) 2^8 e^(scale (s[j] - max)) unnormalized. Returns what the row of P V is to
// be divided by (fa3_finalize): the row sum times 2^8 under fa3, else 1.
float p_row(float* s, std::size_t n, float scale, bool fa3);
// FA3's finalize: row r of o (rows x hd) times 1 / divisor[r].
void fa3_finalize(float* o, std::size_t rows, std::size_t hd, const float* divisor);

// out = softmax(Q K^T / sqrt(head_dim)) V, causal. `p`: B*heads*T*T floats to keep P for the
// backward, or nullptr (a scratch P per worker; required with a `pq` hook, else lowp::Error).
// Without a hook, the queries of the heads sharing a KV head go in blocks of 48 positions: one
// GEMM for a block's scores against the keys up to its last position (the causal upper triangle
// beyond is not computed), its softmax fused there, one GEMM for its output. Bits do not depend
// on `threads`.
void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* out, float* p,
                       int threads, const AttentionP& pq = {});

// The queries of one sequence at positions pos0 .. pos0 + s.T - 1 (q: s.T rows, s.B = 1) over the
// keys and values at positions 0 .. pos0 + s.T - 1 of `cache`: row i sees keys [0, pos0 + i]. With
// pos0 = 0 and the rows attention_forward reads, the same bits as attention_forward (without P
// kept); a single query row (a decode step) gets the bits of its row in the window, since
// gemm_f32 sums every output element alike whatever M and N, and P V's zeros beyond the causal
// limit add exact zeros. The hook sees each head's P as s.T x (pos0 + s.T).
void attention_cached(const AttentionShape& s, std::size_t pos0, const float* q, const KvLayer& cache, float* out,
                      int threads, const AttentionP& pq = {});

// From the forward's P (without `AttentionP`) and dout: dQ, dK, dV (overwritten).
//   dP = dO V^T; dV += P^T dO; dS = P (dP - rowsum(dP P)) / sqrt(hd); dQ = dS K; dK += dS^T Q.
// By the forward's query blocks, in order; within a block the heads sharing a KV head are one
// GEMM's reduction into dK, dV (the same at any thread count).
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* p,
                        const float* dout, float* dq, float* dk, float* dv, int threads);

}  // namespace lowp::accuracy::detail
