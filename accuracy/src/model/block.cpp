#include "model/block.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "lowp/numerics/error.hpp"
#include "model/layers.hpp"

namespace lowp::accuracy::detail {
namespace {

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

void block_forward(BlockOps& ops, int l, float* x, const BlockRows& r, BlockActs& a) {
  const LlamaConfig& c = ops.config();
  const BlockOps::Weights w = ops.weights(l);
  const auto dim = static_cast<std::size_t>(c.dim), kvd = static_cast<std::size_t>(c.kv_dim()),
             hd = static_cast<std::size_t>(c.head_dim()), qd = static_cast<std::size_t>(c.q_dim()),
             hidden = static_cast<std::size_t>(c.hidden_dim), heads = static_cast<std::size_t>(c.n_heads),
             kv_heads = static_cast<std::size_t>(c.n_kv_heads), half = hd / 2, rows = r.B * r.T;
  for (std::size_t b = 0; r.cache && b < r.B; ++b)
    if (r.pos0 + r.T > r.cache[b].capacity)
      throw Error("block_forward: positions " + std::to_string(r.pos0) + ".." + std::to_string(r.pos0 + r.T) +
                  " over a cache of " + std::to_string(r.cache[b].capacity));
  const int threads = ops.threads();
  for (auto [v, n] : {std::pair{&a.xn1, dim}, {&a.q, qd}, {&a.k, kvd}, {&a.v, kvd}, {&a.att, qd}, {&a.out, dim},
                      {&a.xn2, dim}, {&a.h, hidden}})
    v->resize(rows * n);
  float *q = a.q.data(), *k = a.k.data(), *v = a.v.data();
  const auto bias = [&](float* y, std::span<const float> b) { bias_forward(y, b.data(), rows, b.size()); };

  // attention
  if (a.keep) a.x_in.assign(x, x + rows * dim);
  if (a.keep) a.inv1.resize(rows);
  rmsnorm_forward(a.xn1.data(), a.keep ? a.inv1.data() : nullptr, x, w.attn_norm, rows, dim, c.norm_eps, threads);
  ops.finite(a.xn1.data(), dim, l, "the attn_norm output", rows);
  ops.qkv(l, a.xn1.data(), rows, q, k, v);
  bias(q, w.bq);
  bias(k, w.bk);
  bias(v, w.bv);
  if (w.q_norm) {  // QK-norm (Qwen3): each head of q and k over head_dim, after the biases, before RoPE
    if (a.keep) {
      a.q_pre.assign(q, q + rows * qd);
      a.k_pre.assign(k, k + rows * kvd);
      a.invq.resize(rows * heads);
      a.invk.resize(rows * kv_heads);
    }
    rmsnorm_forward(q, a.keep ? a.invq.data() : nullptr, q, w.q_norm, rows * heads, hd, c.norm_eps, threads);
    rmsnorm_forward(k, a.keep ? a.invk.data() : nullptr, k, w.k_norm, rows * kv_heads, hd, c.norm_eps, threads);
  }
  const float *cos = ops.rope_cos() + r.pos0 * half, *sin = ops.rope_sin() + r.pos0 * half;
  rope_forward(q, cos, sin, r.B, r.T, heads, hd);
  rope_forward(k, cos, sin, r.B, r.T, kv_heads, hd);
  ops.rotate_heads(q, k, v, rows);                    // Q R (K R)^T = Q K^T
  ops.point(l, BlockPoint::kv_k, k, rows, kvd);  // as written to the KV cache
  ops.point(l, BlockPoint::kv_v, v, rows, kvd);
  ops.point(l, BlockPoint::q, q, rows, qd);
  ops.point(l, BlockPoint::k, k, rows, kvd);
  ops.point(l, BlockPoint::v, v, rows, kvd);
  const AttentionShape shape{r.B, r.T, heads, kv_heads, hd};
  if (r.cache) {
    const AttentionShape one{1, r.T, heads, kv_heads, hd};
    for (std::size_t b = 0; b < r.B; ++b) {
      write_cache(r.cache[b], k + b * r.T * kvd, v + b * r.T * kvd, r.T, r.pos0, kv_heads, hd);
      attention_cached(one, r.pos0, q + b * r.T * qd, r.cache[b], a.att.data() + b * r.T * qd, threads,
                       ops.p_point(l, r.T, r.pos0 + r.T));
      ops.p_done();
    }
  } else {
    if (a.keep) a.p.resize(r.B * heads * r.T * r.T);
    attention_forward(shape, q, k, v, a.att.data(), a.keep ? a.p.data() : nullptr, threads);
  }
  ops.finite(a.att.data(), qd, l, "the attention output (softmax(QK^T) V)", rows);
  ops.unrotate_v(a.att.data(), rows);  // P (V R) R^T = P V
  ops.wo(l, a.att.data(), rows, a.out.data());
  bias(a.out.data(), w.bo);
  residual_forward(x, a.out.data(), rows * dim);
  ops.finite(x, dim, l, "the residual stream after attention", rows);

  // feed-forward
  if (a.keep) a.x_mid.assign(x, x + rows * dim);
  if (a.keep) a.inv2.resize(rows);
  rmsnorm_forward(a.xn2.data(), a.keep ? a.inv2.data() : nullptr, x, w.ffn_norm, rows, dim, c.norm_eps, threads);
  ops.finite(a.xn2.data(), dim, l, "the ffn_norm output", rows);
  const BlockOps::GateUp gu = ops.gate_up(l, a.xn2.data(), rows);
  swiglu_forward(a.h.data(), gu.g, gu.u, rows, hidden, gu.stride, ops.threads());
  ops.finite(a.h.data(), hidden, l, "silu(gate) * up", rows);
  ops.rotate_down(a.h.data(), rows);  // QuaRot's online Hadamard
  ops.down(l, a.h.data(), rows, a.out.data());
  residual_forward(x, a.out.data(), rows * dim);
  ops.finite(x, dim, l, "the residual stream after the FFN", rows);
}

}  // namespace lowp::accuracy::detail
