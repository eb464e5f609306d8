// The decode step (lowp/accuracy/decoder.hpp): one token through the Llama, its K and V
// appended to a cache that the attention reads. The pieces are forward_window's
// (model/forward.cpp) on one row, so each gives the bits it gives that row in a window:
// gemm_f32 sums every output element the same way whatever M and N (and P V's extra zero
// terms in a longer window add exact zeros).
//
// Every quantization point acts where evaluation's does. When each point's groups stay inside
// one token (per token, per head and token, blocks along the row, or no scale: kv4's cache,
// per-token or MX linear inputs), evaluation of a prefix gives its earlier tokens the values
// they had in the shorter prefixes, and the cache holds exactly what evaluation's holds (the
// quantized K and V). When a point's scale spans tokens (fp8-attn's per-tensor Q, K, V;
// fp8-tensorwise's per-tensor linear inputs; NVFP4's tensor level), evaluation of the prefix
// quantizes with the amax of every token so far, and that changes the earlier tokens'
// attention outputs, hence their K and V in every later layer: keeping the float K/V and
// quantizing with the current amax would still differ from evaluation from layer 1 on. So
// the decoder re-runs the prefix there (forward_window, as generation did before the cache).
// A static scale (act.scale / attn.scale = static) is fixed by calibration, not by the
// window: those points are token-local again and the cache holds.
#include "lowp/accuracy/decoder.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "lowp/accuracy/memory.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/gemm.hpp"
#include "model/attention.hpp"
#include "model/calibration_cache.hpp"
#include "model/llama.hpp"

namespace lowp::accuracy {
namespace {

using detail::LinearGroup;
using detail::PreparedLayer;
using detail::PreparedModel;
using quant::QuantSpec;

// True when quantizing one token's row alone gives what quantizing a window of rows gives it,
// at the point `point` of pm's recipe.
bool token_local(const PreparedModel& pm, const std::optional<QuantSpec>& s, const std::string& point) {
  if (!s) return true;
  if (s->cast.round == Round::stochastic) return false;  // random bits keyed by the place in the window
  if (s->rule == quant::ScaleRule::none) return true;   // a plain cast
  if (detail::static_point(pm.recipe, point, *s)) return true;  // a calibrated tensor-level scale
  return (s->granularity == quant::Granularity::row || s->granularity == quant::Granularity::block) &&
         s->rule != quant::ScaleRule::nvfp4 &&  // NVFP4's second level is a per-tensor amax
         s->rule != quant::ScaleRule::nvfp4_4over6;
}

bool group_local(const PreparedModel& pm, const LinearGroup& g) {
  return std::all_of(g.begin(), g.end(),
                     [&](const detail::Linear& L) { return token_local(pm, L.act, L.act_points[0]); });
}

bool cacheable(const PreparedModel& pm) {
  if (!group_local(pm, pm.classifier)) return false;
  for (const PreparedLayer& L : pm.layers)
    if (!group_local(pm, L.qkv) || !group_local(pm, L.wo) || !group_local(pm, L.gate_up) ||
        !group_local(pm, L.down) || !token_local(pm, L.q, "q") || !token_local(pm, L.k, "k") ||
        !token_local(pm, L.p, "p") || !token_local(pm, L.v, "v") || !token_local(pm, L.kv, "kv.k"))
      return false;
  return true;
}

}  // namespace

struct Decoder::Impl {
  Impl(PreparedModel prepared, std::size_t positions, int threads)
      : pm(std::move(prepared)), ops(pm, log, threads), threads(threads), c(pm.cfg), positions(positions),
        cached(cacheable(pm)), dim(static_cast<std::size_t>(c.dim)), kv(static_cast<std::size_t>(c.kv_dim())),
        hd(static_cast<std::size_t>(c.head_dim())), qd(static_cast<std::size_t>(c.q_dim())),
        hidden(static_cast<std::size_t>(c.hidden_dim)), vocab(static_cast<std::size_t>(c.vocab_size)),
        kv_heads(static_cast<std::size_t>(c.n_kv_heads)), heads(static_cast<std::size_t>(c.n_heads)) {
    if (!cached) {
      window_logits.resize(positions * vocab);
      return;
    }
    k_cache.resize(pm.layers.size() * kv_heads * positions * hd);
    v_cache.resize(k_cache.size());
    x.resize(dim);
    xb.resize(dim);
    qkv.resize(qd + 2 * kv);
    att.resize(qd);
    out.resize(dim);
    gu.resize(2 * hidden);
    hb.resize(hidden);
    s_rows.resize(heads / kv_heads * positions);
    row_sums.resize(heads / kv_heads);
    logits.resize(vocab);
  }

  PreparedModel pm;
  detail::ErrorLog log;  // the points' errors (not reported: generation has no reference)
  detail::ForwardOps ops;
  const int threads;
  const LlamaConfig& c;
  const std::size_t positions;
  const bool cached;
  const std::size_t dim, kv, hd, qd, hidden, vocab, kv_heads, heads;
  std::size_t pos = 0;
  std::vector<int> tokens;           // the prefix (re-run when not cached)
  std::vector<float> window_logits;  // positions x vocab (re-run)
  // The cache, per layer and KV head: positions x head_dim rows of K and of V, quantized as
  // the attention reads them.
  std::vector<float> k_cache, v_cache;
  std::vector<float> x, xb, qkv, att, out, gu, hb, s_rows, row_sums, logits;

  float* k_head(std::size_t l, std::size_t g) { return k_cache.data() + ((l * kv_heads + g) * positions) * hd; }
  float* v_head(std::size_t l, std::size_t g) { return v_cache.data() + ((l * kv_heads + g) * positions) * hd; }

  void check_token(int token) const {
    if (token < 0 || token >= c.vocab_size)
      throw Error("decode: token id " + std::to_string(token) + " is outside the model's vocabulary [0, " +
                  std::to_string(c.vocab_size) + ")");
    if (pos >= positions)
      throw Error("decode: position " + std::to_string(pos) + " is past the " + std::to_string(positions) +
                  " the decoder was made for");
  }

  void point(const std::optional<QuantSpec>& spec, float* p, std::size_t rows, std::size_t cols, int l,
             const char* name) {
    if (spec) ops.quantize_point(spec, p, rows, cols, l, name);
  }

  // One token through the layers at position pos; the classifier only when `score`.
  void run(int token, bool score) {
    quant::widen_rows(pm.embedding_view, static_cast<std::size_t>(token), 1, x.data());
    for (std::size_t l = 0; l < pm.layers.size(); ++l) {
      attention_block(l);
      ffn_block(l);
    }
    if (!score) return;
    detail::rmsnorm(x.data(), pm.final_norm.data(), xb.data(), 1, dim, c.norm_eps);
    ops.linear(pm.classifier, xb.data(), logits.data(), -1, 1);
  }

  void attention_block(std::size_t l) {
    const PreparedLayer& L = pm.layers[l];
    const int li = static_cast<int>(l);
    const Recipe& r = pm.recipe;
    detail::rmsnorm(x.data(), L.attn_norm.data(), xb.data(), 1, dim, c.norm_eps);
    ops.linear(L.qkv, xb.data(), qkv.data(), li, 1);
    for (std::size_t i = 0; i < L.qkv_bias.size(); ++i) qkv[i] += L.qkv_bias[i];
    float *q = qkv.data(), *k = q + qd, *v = k + kv;
    detail::qk_norm(pm, L, q, k, 1, 1);
    detail::rope(pm, q, 1, heads, pos);
    detail::rope(pm, k, 1, kv_heads, pos);
    const bool rotate = pm.head_rotation.kind != hadamard::RotationKind::none;
    if (rotate) {  // HadaCore / FA3: Q R (K R)^T = Q K^T
      pm.head_rotation.apply(q, heads, hd);
      pm.head_rotation.apply(k, kv_heads, hd);
      if (r.rotate_v) pm.head_rotation.apply(v, kv_heads, hd);
    }
    // The quantization points in forward_window's order: the cache's, then the attention's.
    point(L.kv, k, 1, kv, li, "kv.k");
    point(L.kv, v, 1, kv, li, "kv.v");
    point(L.q, q, 1, qd, li, "q");
    point(L.k, k, 1, kv, li, "k");
    point(L.v, v, 1, kv, li, "v");
    for (std::size_t g = 0; g < kv_heads; ++g) {
      std::copy_n(k + g * hd, hd, k_head(l, g) + pos * hd);
      std::copy_n(v + g * hd, hd, v_head(l, g) + pos * hd);
    }
    const std::size_t T = pos + 1;
    attend(L, li, q, T);
    if (rotate && r.rotate_v)  // P (V R) R^T = P V
      pm.head_rotation.apply_inverse(att.data(), heads, hd);
    ops.linear(L.wo, att.data(), out.data(), li, 1);
    for (std::size_t i = 0; i < L.wo_bias.size(); ++i) out[i] += L.wo_bias[i];
    for (std::size_t i = 0; i < dim; ++i) x[i] += out[i];
  }

  // Row `pos` of causal GQA attention over the cache with forward_window's arithmetic for
  // that row (attention_forward in model/attention.cpp): S = q_h K_g^T, the scaled softmax over positions
  // 0..pos, P quantized (attn.p), att_h = P V_g. The `group` heads sharing KV head g are the
  // rows of one GEMM each way (the bits of a row do not depend on the others; P's spec acts per
  // row here, so quantizing the group's rows together changes nothing).
  void attend(const PreparedLayer& L, int li, const float* q, std::size_t T) {
    const std::size_t group = heads / kv_heads, l = static_cast<std::size_t>(li);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const bool fa3 = L.p && pm.recipe.p_form == AttnPForm::fa3;
    float* S = s_rows.data();
    for (std::size_t g = 0; g < kv_heads; ++g) {
      const std::size_t h0 = g * group;  // heads h0 .. h0 + group - 1, contiguous in q and att
      quant::gemm_f32(q + h0 * hd, k_head(l, g), S, group, T, hd, false, threads);
      for (std::size_t r = 0; r < group; ++r) {
        float* row = S + r * T;
        row_sums[r] = detail::p_row(row, T, scale, fa3);  // attention_forward's row of P
      }
      point(L.p, S, group, T, li, "p");
      float* o = att.data() + h0 * hd;
      quant::gemm_f32(S, quant::Layout::as_is, v_head(l, g), quant::Layout::transposed, o, group, hd, T, false,
                      threads);
      if (fa3) detail::fa3_finalize(o, group, hd, row_sums.data());
    }
  }

  void ffn_block(std::size_t l) {
    const PreparedLayer& L = pm.layers[l];
    const int li = static_cast<int>(l);
    detail::rmsnorm(x.data(), L.ffn_norm.data(), xb.data(), 1, dim, c.norm_eps);
    ops.linear(L.gate_up, xb.data(), gu.data(), li, 1);
    for (std::size_t i = 0; i < hidden; ++i) hb[i] = detail::silu(gu[i]) * gu[hidden + i];
    if (pm.down_rotation.kind != hadamard::RotationKind::none)  // QuaRot's online Hadamard
      pm.down_rotation.apply(hb.data(), 1, hidden);
    ops.linear(L.down, hb.data(), out.data(), li, 1);
    for (std::size_t i = 0; i < dim; ++i) x[i] += out[i];
  }
};

Decoder::Decoder(const LlamaModel& model, const Recipe& recipe, std::size_t positions, int threads,
                 const CalibrationText* calib) {
  const LlamaConfig& c = model.config;
  if (positions == 0) throw Error("decode: a decoder for 0 positions");
  // What the run holds, checked before the decoder allocates any of it, as evaluate() counts
  // it: the model's weights (unless mapped), the recipe's copies, then the cache and the step's
  // rows, or a re-run's window.
  const double P = static_cast<double>(positions), dim = c.dim, kv = c.kv_dim(), qd = c.q_dim(),
               hidden = c.hidden_dim, vocab = c.vocab_size;
  const double weights =
      weight_bytes(c) * ((model.mapped ? 0 : 1) + (recipe.is_identity() ? 0 : 1) + (recipe.quarot ? 1 : 0));
  check_memory(weights + cache_bytes(c, positions) + 4 * (4 * dim + 2 * qd + 2 * kv + 3 * hidden + P + vocab),
               "decode: a KV cache of " + std::to_string(positions) + " positions x " + std::to_string(c.n_layers) +
                   " layers x " + std::to_string(c.n_kv_heads) + " KV heads x head_dim " +
                   std::to_string(c.head_dim()) + " (K and V, float32) and the weights");
  std::optional<detail::CalibratedWeights> calibrated;  // evaluate()'s, computed or read from the cache
  if (recipe.needs_calibration() && calib) calibrated = detail::calibrate_weights(model, recipe, *calib, positions, threads);
  auto pm = detail::prepare(model, recipe, positions, calibrated ? &*calibrated : nullptr);
  if (!cacheable(pm))
    check_memory(weights + 4 * P * (8 * dim + 4 * kv + 4 * hidden + 2 * P + 2 * vocab + c.head_dim()),
                 "decode: re-running windows of up to " + std::to_string(positions) + " positions and the weights");
  impl_ = std::make_unique<Impl>(std::move(pm), positions, threads);
}

Decoder::~Decoder() = default;
Decoder::Decoder(Decoder&&) noexcept = default;
Decoder& Decoder::operator=(Decoder&&) noexcept = default;

std::span<const float> Decoder::step(int token) {
  Impl& d = *impl_;
  d.check_token(token);
  if (!d.cached) {
    d.tokens.push_back(token);
    const std::size_t T = d.tokens.size();
    detail::forward_window(d.pm, d.tokens, d.window_logits.data(), d.log, d.threads, T - 1);
    ++d.pos;
    return {d.window_logits.data() + (T - 1) * d.vocab, d.vocab};
  }
  d.run(token, true);
  ++d.pos;
  return d.logits;
}

void Decoder::feed(int token) {
  Impl& d = *impl_;
  d.check_token(token);
  if (d.cached) d.run(token, false);
  else d.tokens.push_back(token);
  ++d.pos;
}

std::size_t Decoder::position() const { return impl_->pos; }

bool Decoder::cached() const { return impl_->cached; }

double Decoder::cache_bytes(const LlamaConfig& c, std::size_t positions) {
  return 2.0 * 4.0 * static_cast<double>(c.n_layers) * static_cast<double>(positions) *
         static_cast<double>(c.kv_dim());
}

}  // namespace lowp::accuracy
