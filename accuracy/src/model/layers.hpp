// The Llama's layers besides attention (model/attention.hpp), each *_forward beside its
// *_backward as llm.c pairs them (private to lowp_accuracy). One implementation for the block
// (model/block.cpp: the forwards, for evaluation, the decode step and training), training's
// backward (train/llama_train.cpp) and, where its ScaledTensor rules do not differ, Scalify.
//
// Shapes are explicit: `rows` = B*T positions (row r = b * T + t), row-major; a backward
// *adds* into weight gradients and writes (or adds, where it says so) input gradients.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy::detail {

// ---- input checks: lowp::Error naming what is wrong (`what`: "train forward", ...).
// tokens (and targets when not empty) are B x T ids in [0, vocab); T <= seq_len.
void check_batch(std::span<const int> tokens, std::span<const int> targets, std::size_t B, std::size_t T,
                 std::size_t seq_len, std::size_t vocab, const char* what);

// ---- embedding: out[r] = table[tokens[r]], out: [rows, dim]; the table as stored (its rows
// widened to float32).
void embedding_forward(float* out, const quant::StoredMatrix& table, std::span<const int> tokens);
// dtable[tokens[r]] += dout[r], rows in order.
void embedding_backward(float* dtable, const float* dout, std::span<const int> tokens, std::size_t dim);

// ---- RMSNorm: out = w * (x * inv), inv = 1 / sqrt(mean(x^2) + eps) per row, the sum of squares
// in double. x, out: [rows, dim]; w: [dim]; inv: [rows] (kept for the backward) or nullptr.
void rmsnorm_forward(float* out, float* inv, const float* x, const float* w, std::size_t rows, std::size_t dim,
                     float eps, int threads);
// dx += inv (w dy) - x inv^3 / dim sum(w dy x); dw += sum over rows (in order) of dy x inv.
void rmsnorm_backward(float* dx, float* dw, const float* dout, const float* x, const float* w, const float* inv,
                      std::size_t rows, std::size_t dim, int threads);

// ---- RoPE, interleaved pairs (llama2.c / GGUF): pair (2i, 2i+1) of each head turns by
// pos * theta^(-2i/head_dim) * rope_freq_scale / rope_freq_factors[i]. Tables: positions x
// head_dim/2, angles in double rounded once.
void rope_tables(const LlamaConfig& c, std::size_t positions, std::vector<float>& cos_table,
                 std::vector<float>& sin_table);
// x: [B*T, heads, head_dim], in place; position t of each sequence uses table row t.
void rope_forward(float* x, const float* cos_table, const float* sin_table, std::size_t B, std::size_t T,
                  std::size_t heads, std::size_t head_dim);
// The transpose of the rotation, in place on dx.
void rope_backward(float* dx, const float* cos_table, const float* sin_table, std::size_t B, std::size_t T,
                   std::size_t heads, std::size_t head_dim);

// ---- attention biases: y[r] += b; db += sum over rows (in order) of dy[r] (y, dy: [rows, n]).
void bias_forward(float* y, const float* b, std::size_t rows, std::size_t n);
void bias_backward(float* db, const float* dy, std::size_t rows, std::size_t n);

// ---- residual: x += y (n values); its backward is the identity (dy = dx).
void residual_forward(float* x, const float* y, std::size_t n);

// ---- SwiGLU: h = silu(g) u, silu(x) = x / (1 + exp(-x)). h: [rows, hidden]; g and u rows
// `stride` apart (hidden when separate, 2 hidden for a fused [gate | up] GEMM output).
float silu(float x);
void swiglu_forward(float* h, const float* g, const float* u, std::size_t rows, std::size_t hidden,
                    std::size_t stride, int threads);
// dg = dh u silu'(g), du = dh silu(g) (n values, dense), in double. Both: the same bits at any
// thread count (each value's arithmetic is its own).
void swiglu_backward(float* dg, float* du, const float* dh, const float* g, const float* u, std::size_t n,
                     int threads);
// The same on the kernels of `isa` (available here: best_isa() or below); the ISA does not
// change the bits. The overloads above take best_isa().
void swiglu_forward(float* h, const float* g, const float* u, std::size_t rows, std::size_t hidden,
                    std::size_t stride, int threads, Isa isa);
void swiglu_backward(float* dg, float* du, const float* dh, const float* g, const float* u, std::size_t n,
                     int threads, Isa isa);

// ---- cross-entropy over [rows, vocab] logits: returns the sum over rows (in order) of
// log-sum-exp - logit[target], in double; sums[r] = sum_j exp(logit - rowmax) for the backward
// (each exp in float, model/exp.hpp; the sums in double).
double crossentropy_forward(const float* logits, const int* targets, std::size_t rows, std::size_t vocab,
                            double* sums);
// In place: logits <- (softmax - onehot(target)) / loss_rows.
void crossentropy_backward(float* logits, const double* sums, const int* targets, std::size_t rows, std::size_t vocab,
                           double loss_rows, int threads);

}  // namespace lowp::accuracy::detail
