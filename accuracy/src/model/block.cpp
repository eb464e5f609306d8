#include "model/block.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "lowp/quant/quantize.hpp"
#include "model/layers.hpp"

namespace lowp::accuracy::detail {
namespace {

using quant::QuantSpec;

// attention over the cache with layer l's attn.p quantizing each head's P (rows x keys); the heads'
// errors are logged in head order, one tensor each.
void attend(ForwardOps& ops, int l, const float* q, std::size_t rows, std::size_t pos0, const KvLayer& cache,
            float* att) {
  const PreparedModel& pm = ops.model();
  const LlamaConfig& c = pm.cfg;
  const auto heads = static_cast<std::size_t>(c.n_heads);
  const std::size_t keys = pos0 + rows;
  const std::optional<QuantSpec>& p_spec = pm.layers[static_cast<std::size_t>(l)].p;
  AttentionP pq;
  std::vector<ErrorLog> head_logs;
  if (p_spec) {
    ops.check_shape(*p_spec, rows, keys, "p", l);
    head_logs.resize(heads);
    pq.fa3 = pm.recipe.p_form == AttnPForm::fa3;  // FlashAttention-3's P: the unnormalized exponentials
    pq.quantize = [&](std::size_t h, float* p) {
      const std::vector<float> before(p, p + rows * keys);
      quant::fake_quant(*p_spec, p, rows, keys);
      head_logs[h].add(l, "p", before.data(), p, rows * keys);
    };
  }
  const AttentionShape shape{1, rows, heads, static_cast<std::size_t>(c.n_kv_heads),
                             static_cast<std::size_t>(c.head_dim())};
  attention_cached(shape, pos0, q, cache, att, ops.threads(), pq);
  for (const ErrorLog& h : head_logs)
    for (const TensorError& e : h.entries()) ops.log().add(e);
}

// [q | k | v] rows -> q (rows x qd), k and v (rows x kvd).
void split_qkv(const float* qkv, std::size_t rows, std::size_t qd, std::size_t kvd, float* q, float* k, float* v) {
  const std::size_t w = qd + 2 * kvd;
  for (std::size_t t = 0; t < rows; ++t) {
    const float* row = qkv + t * w;
    std::copy_n(row, qd, q + t * qd);
    std::copy_n(row + qd, kvd, k + t * kvd);
    std::copy_n(row + qd + kvd, kvd, v + t * kvd);
  }
}

// Rows [pos0, pos0 + rows) of the cache's heads = k, v (rows x kv_heads * hd).
void write_cache(const KvLayer& cache, const float* k, const float* v, std::size_t rows, std::size_t pos0,
                 std::size_t kv_heads, std::size_t hd) {
  for (std::size_t g = 0; g < kv_heads; ++g)
    for (std::size_t t = 0; t < rows; ++t) {
      const std::size_t at = (g * cache.capacity + pos0 + t) * hd;
      std::copy_n(k + (t * kv_heads + g) * hd, hd, cache.k + at);
      std::copy_n(v + (t * kv_heads + g) * hd, hd, cache.v + at);
    }
}

}  // namespace

KvCache::KvCache(std::size_t layers, std::size_t kv_heads, std::size_t head_dim, std::size_t capacity)
    : per_layer_(kv_heads * capacity * head_dim), capacity_(capacity), k_(layers * per_layer_), v_(k_.size()) {}

KvLayer KvCache::layer(std::size_t l) { return {k_.data() + l * per_layer_, v_.data() + l * per_layer_, capacity_}; }

void embed(ForwardOps& ops, std::span<const int> tokens, float* x) {
  embedding_forward(x, ops.model().embedding_view, tokens);
  ops.finite(x, static_cast<std::size_t>(ops.model().cfg.dim), -1, "token_embedding rows", tokens.size());
}

void block_forward(ForwardOps& ops, int l, float* x, std::size_t rows, std::size_t pos0, const KvLayer& cache,
                   BlockScratch& s) {
  const PreparedModel& pm = ops.model();
  const PreparedLayer& L = pm.layers[static_cast<std::size_t>(l)];
  const LlamaConfig& c = pm.cfg;
  const auto dim = static_cast<std::size_t>(c.dim), kvd = static_cast<std::size_t>(c.kv_dim()),
             hd = static_cast<std::size_t>(c.head_dim()), qd = static_cast<std::size_t>(c.q_dim()),
             hidden = static_cast<std::size_t>(c.hidden_dim), heads = static_cast<std::size_t>(c.n_heads),
             kv_heads = static_cast<std::size_t>(c.n_kv_heads), half = hd / 2;
  const int threads = ops.threads();
  for (auto [v, n] : {std::pair{&s.xb, dim}, {&s.qkv, qd + 2 * kvd}, {&s.q, qd}, {&s.k, kvd}, {&s.v, kvd},
                      {&s.att, qd}, {&s.out, dim}, {&s.gu, 2 * hidden}, {&s.hb, hidden}})
    v->resize(rows * n);
  float *q = s.q.data(), *k = s.k.data(), *v = s.v.data();

  // attention
  rmsnorm_forward(s.xb.data(), nullptr, x, L.attn_norm.data(), rows, dim, c.norm_eps, threads);
  ops.finite(s.xb.data(), dim, l, "the attn_norm output", rows);
  ops.linear(L.qkv, s.xb.data(), s.qkv.data(), l, rows);
  bias_forward(s.qkv.data(), L.qkv_bias.data(), rows, L.qkv_bias.size());
  split_qkv(s.qkv.data(), rows, qd, kvd, q, k, v);
  const float *cos = pm.rope_cos.data() + pos0 * half, *sin = pm.rope_sin.data() + pos0 * half;
  rope_forward(q, cos, sin, 1, rows, heads, hd);
  rope_forward(k, cos, sin, 1, rows, kv_heads, hd);
  const bool rotate = pm.head_rotation.kind != hadamard::RotationKind::none;
  if (rotate) {  // HadaCore / FA3: Q R (K R)^T = Q K^T
    pm.head_rotation.apply(q, rows * heads, hd);
    pm.head_rotation.apply(k, rows * kv_heads, hd);
    if (pm.recipe.rotate_v) pm.head_rotation.apply(v, rows * kv_heads, hd);
  }
  ops.quantize_point(L.kv, k, rows, kvd, l, "kv.k");  // as written to the KV cache
  ops.quantize_point(L.kv, v, rows, kvd, l, "kv.v");
  ops.quantize_point(L.q, q, rows, qd, l, "q");
  ops.quantize_point(L.k, k, rows, kvd, l, "k");
  ops.quantize_point(L.v, v, rows, kvd, l, "v");
  write_cache(cache, k, v, rows, pos0, kv_heads, hd);
  attend(ops, l, q, rows, pos0, cache, s.att.data());
  ops.finite(s.att.data(), qd, l, "the attention output (softmax(QK^T) V)", rows);
  if (rotate && pm.recipe.rotate_v)  // P (V R) R^T = P V
    pm.head_rotation.apply_inverse(s.att.data(), rows * heads, hd);
  ops.linear(L.wo, s.att.data(), s.out.data(), l, rows);
  bias_forward(s.out.data(), L.wo_bias.data(), rows, L.wo_bias.size());
  residual_forward(x, s.out.data(), rows * dim);
  ops.finite(x, dim, l, "the residual stream after attention", rows);

  // feed-forward
  rmsnorm_forward(s.xb.data(), nullptr, x, L.ffn_norm.data(), rows, dim, c.norm_eps, threads);
  ops.finite(s.xb.data(), dim, l, "the ffn_norm output", rows);
  ops.linear(L.gate_up, s.xb.data(), s.gu.data(), l, rows);
  swiglu_forward(s.hb.data(), s.gu.data(), s.gu.data() + hidden, rows, hidden, 2 * hidden);
  ops.finite(s.hb.data(), hidden, l, "silu(gate) * up", rows);
  if (pm.down_rotation.kind != hadamard::RotationKind::none)  // QuaRot's online Hadamard
    pm.down_rotation.apply(s.hb.data(), rows, hidden);
  ops.linear(L.down, s.hb.data(), s.out.data(), l, rows);
  residual_forward(x, s.out.data(), rows * dim);
  ops.finite(x, dim, l, "the residual stream after the FFN", rows);
}

void head_forward(ForwardOps& ops, const float* x, std::size_t rows, std::size_t first, float* logits,
                  BlockScratch& s) {
  const PreparedModel& pm = ops.model();
  const auto dim = static_cast<std::size_t>(pm.cfg.dim), vocab = static_cast<std::size_t>(pm.cfg.vocab_size);
  s.xb.resize(rows * dim);
  rmsnorm_forward(s.xb.data(), nullptr, x, pm.final_norm.data(), rows, dim, pm.cfg.norm_eps, ops.threads());
  ops.finite(s.xb.data(), dim, -1, "the final RMSNorm output", rows);
  ops.linear(pm.classifier, s.xb.data() + first * dim, logits + first * vocab, -1, rows - first);
}

}  // namespace lowp::accuracy::detail
