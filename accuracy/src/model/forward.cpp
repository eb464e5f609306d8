// The Llama forward pass over a window of T tokens (batched prefill):
//   x = embedding[tokens]; per layer block_forward (model/block.hpp) over a KV cache of T rows;
//   logits = classifier(rmsnorm(x))
// and ForwardOps, the recipe's linears and quantization points, as the block calls them.
#include <algorithm>
#include <cmath>

#include "model/block.hpp"
#include "model/layers.hpp"
#include "model/llama.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy::detail {
namespace {

using quant::QuantSpec;

class Window : ForwardOps {
 public:
  // The window's cache is one layer's: each layer writes its K/V rows [0, T) and attends over them.
  Window(const PreparedModel& pm, std::size_t T, ErrorLog& log, int threads)
      : ForwardOps(pm, &log, threads), T_(T),
        cache_(1, static_cast<std::size_t>(pm.cfg.n_kv_heads), static_cast<std::size_t>(pm.cfg.head_dim()), T) {}

  // Logits of rows [first, T) only: rows before `first` are not scored.
  void run(std::span<const int> tokens, float* logits, std::size_t first, const ResidualTap& tap) {
    x_.resize(T_ * static_cast<std::size_t>(model().cfg.dim));
    embed(*this, tokens, x_.data());
    run_from(0, logits, first, tap);
  }

  // Layers [from, n_layers) and the head on x_, the residual stream entering layer `from`.
  void run_from(std::size_t from, float* logits, std::size_t first, const ResidualTap& tap) {
    const KvLayer cache = cache_.layer(0);
    for (std::size_t l = from; l < model().layers.size(); ++l) {
      if (tap) tap(l, x_.data());
      block_forward(*this, static_cast<int>(l), x_.data(), BlockRows{1, T_, 0, &cache}, acts_);
    }
    if (tap) tap(model().layers.size(), x_.data());
    head_forward(*this, x_.data(), T_, first, logits, acts_.xn1);
  }

  void resume(std::span<const float> x) { x_.assign(x.begin(), x.end()); }

 private:
  const std::size_t T_;
  KvCache cache_;
  std::vector<float> x_;
  BlockActs acts_;
};

}  // namespace

void embed(ForwardOps& ops, std::span<const int> tokens, float* x) {
  embedding_forward(x, ops.model().embedding_view, tokens);
  ops.finite(x, static_cast<std::size_t>(ops.model().cfg.dim), -1, "token_embedding rows", tokens.size());
}

void head_forward(ForwardOps& ops, const float* x, std::size_t rows, std::size_t first, float* logits,
                  std::vector<float>& xn) {
  const PreparedModel& pm = ops.model();
  const auto dim = static_cast<std::size_t>(pm.cfg.dim), vocab = static_cast<std::size_t>(pm.cfg.vocab_size);
  xn.resize(rows * dim);
  rmsnorm_forward(xn.data(), nullptr, x, pm.final_norm.data(), rows, dim, pm.cfg.norm_eps, ops.threads());
  ops.finite(xn.data(), dim, -1, "the final RMSNorm output", rows);
  ops.linear(pm.classifier, xn.data() + first * dim, logits + first * vocab, -1, rows - first);
}

// ---------------------------------------------------------------- the block's ops

BlockOps::Weights ForwardOps::weights(int l) const {
  const PreparedLayer& L = pm_.layers[static_cast<std::size_t>(l)];
  Weights w{L.attn_norm.data(), L.ffn_norm.data(), {}, {}, {}, L.wo_bias,
            L.q_norm.empty() ? nullptr : L.q_norm.data(), L.k_norm.empty() ? nullptr : L.k_norm.data()};
  if (!L.qkv_bias.empty()) {  // [bq | bk | bv], zeros where the model has none
    const auto qd = static_cast<std::size_t>(pm_.cfg.q_dim()), kvd = static_cast<std::size_t>(pm_.cfg.kv_dim());
    const std::span<const float> b = L.qkv_bias;
    w.bq = b.subspan(0, qd);
    w.bk = b.subspan(qd, kvd);
    w.bv = b.subspan(qd + kvd, kvd);
  }
  return w;
}

void ForwardOps::qkv(int l, const float* xn, std::size_t rows, float* q, float* k, float* v) {
  const auto qd = static_cast<std::size_t>(pm_.cfg.q_dim()), kvd = static_cast<std::size_t>(pm_.cfg.kv_dim());
  const std::size_t w = qd + 2 * kvd;
  qkv_.resize(rows * w);
  linear(pm_.layers[static_cast<std::size_t>(l)].qkv, xn, qkv_.data(), l, rows);
  for (std::size_t t = 0; t < rows; ++t) {
    const float* row = qkv_.data() + t * w;
    std::copy_n(row, qd, q + t * qd);
    std::copy_n(row + qd, kvd, k + t * kvd);
    std::copy_n(row + qd + kvd, kvd, v + t * kvd);
  }
}

void ForwardOps::wo(int l, const float* att, std::size_t rows, float* out) {
  linear(pm_.layers[static_cast<std::size_t>(l)].wo, att, out, l, rows);
}

BlockOps::GateUp ForwardOps::gate_up(int l, const float* xn, std::size_t rows) {
  const auto hidden = static_cast<std::size_t>(pm_.cfg.hidden_dim);
  gu_.resize(rows * 2 * hidden);
  linear(pm_.layers[static_cast<std::size_t>(l)].gate_up, xn, gu_.data(), l, rows);
  return {gu_.data(), gu_.data() + hidden, 2 * hidden};
}

void ForwardOps::down(int l, const float* h, std::size_t rows, float* out) {
  linear(pm_.layers[static_cast<std::size_t>(l)].down, h, out, l, rows);
}

void ForwardOps::rotate_heads(float* q, float* k, float* v, std::size_t rows) {
  if (pm_.head_rotation.kind == hadamard::RotationKind::none) return;
  const auto hd = static_cast<std::size_t>(pm_.cfg.head_dim()), kvh = static_cast<std::size_t>(pm_.cfg.n_kv_heads);
  pm_.head_rotation.apply(q, rows * static_cast<std::size_t>(pm_.cfg.n_heads), hd);
  pm_.head_rotation.apply(k, rows * kvh, hd);
  if (pm_.recipe.rotate_v) pm_.head_rotation.apply(v, rows * kvh, hd);
}

void ForwardOps::unrotate_v(float* att, std::size_t rows) {
  if (pm_.head_rotation.kind == hadamard::RotationKind::none || !pm_.recipe.rotate_v) return;
  pm_.head_rotation.apply_inverse(att, rows * static_cast<std::size_t>(pm_.cfg.n_heads),
                                  static_cast<std::size_t>(pm_.cfg.head_dim()));
}

void ForwardOps::point(int l, BlockPoint p, float* x, std::size_t rows, std::size_t cols) {
  const PreparedLayer& L = pm_.layers[static_cast<std::size_t>(l)];
  switch (p) {
    case BlockPoint::kv_k: return quantize_point(L.kv, x, rows, cols, l, "kv.k");
    case BlockPoint::kv_v: return quantize_point(L.kv, x, rows, cols, l, "kv.v");
    case BlockPoint::q: return quantize_point(L.q, x, rows, cols, l, "q");
    case BlockPoint::k: return quantize_point(L.k, x, rows, cols, l, "k");
    case BlockPoint::v: return quantize_point(L.v, x, rows, cols, l, "v");
  }
}

// Each head's P (rows x keys) through the layer's attn.p, its error in that head's log (the
// hook runs on worker threads, each on its own head); p_done logs them in head order.
AttentionP ForwardOps::p_point(int l, std::size_t rows, std::size_t keys) {
  const std::optional<QuantSpec>& spec = pm_.layers[static_cast<std::size_t>(l)].p;
  AttentionP pq;
  head_logs_.clear();
  if (!spec) return pq;
  check_shape(*spec, rows, keys, "p", l);
  head_logs_.resize(static_cast<std::size_t>(pm_.cfg.n_heads));
  pq.fa3 = pm_.recipe.p_form == AttnPForm::fa3;  // FlashAttention-3's P: the unnormalized exponentials
  pq.quantize = [this, &spec, l, rows, keys](std::size_t h, float* p) {
    std::vector<float> before;
    if (log_) before.assign(p, p + rows * keys);
    quant::fake_quant(*spec, p, rows, keys);
    if (log_) head_logs_[h].add(l, "p", before.data(), p, rows * keys);
  };
  return pq;
}

void ForwardOps::p_done() {
  for (const ErrorLog& h : head_logs_)
    for (const TensorError& e : h.entries()) log_->add(e);
  head_logs_.clear();
}

void ForwardOps::rotate_down(float* h, std::size_t rows) {
  if (pm_.down_rotation.kind != hadamard::RotationKind::none)
    pm_.down_rotation.apply(h, rows, static_cast<std::size_t>(pm_.cfg.hidden_dim));
}

// y = x W^T for each linear of the group, outputs side by side (rows x sum n).
void ForwardOps::linear(const LinearGroup& group, const float* in, float* out, int l, std::size_t rows) {
  if (pm_.capture) pm_.capture(l, group, in, rows);
  std::size_t total = 0;
  for (const auto& L : group) total += L.n;
  const auto check = [&](const Linear& L, const float* y) {
    if (!pm_.check_finite) return;
    std::string name = "the output of";
    for (std::size_t i = 0; i < L.act_points.size(); ++i)
      name.append(i ? "|" : " ").append(std::string_view(L.act_points[i]).substr(2));
    finite(y, L.n, l, name, rows);
  };
  // What a product reads: a one-row product (a decode step) the packed form where there is one
  // (its interleaved copy where made).
  const auto stored = [&](const Linear& L) -> const quant::StoredMatrix& {
    if (rows != 1 || !L.packed) return L.weight;
    return L.interleaved ? L.interleaved->matrix() : L.packed->matrix();
  };
  if (std::all_of(group.begin(), group.end(), [](const Linear& L) { return L.int_act; })) {
    // act.ggml: llama.cpp's quantized activations and integer dots, the group in one parallel
    // region, each part written in place of the concatenation (each element one dot).
    mats_.clear();
    outs_.clear();
    for (std::size_t col = 0; const Linear& L : group) {
      mats_.push_back(L.weight);
      outs_.push_back(out + col);
      col += L.n;
    }
    quant::gemm_act(in, mats_, outs_, total, rows, threads_);
    return;  // (not the float32 reference, which alone checks its outputs are finite)
  }
  const auto plain = [](const Linear& L) {
    return L.rot.kind == hadamard::RotationKind::none && !L.act && !L.engine && !L.int_act;
  };
  if (rows == 1 && group.size() > 1 && std::all_of(group.begin(), group.end(), plain)) {
    // A decode step's [q | k | v] or [gate | up]: one parallel region for the group (each
    // output row's bits are its own GEMV's), writing each part in place of the concatenation.
    mats_.clear();
    outs_.clear();
    for (std::size_t col = 0; const Linear& L : group) {
      mats_.push_back(stored(L));
      outs_.push_back(out + col);
      col += L.n;
    }
    quant::gemv_f32(in, mats_, outs_, threads_);
    for (std::size_t i = 0; i < group.size(); ++i) check(group[i], outs_[i]);
    return;
  }
  std::size_t col = 0;
  for (const Linear& L : group) {
    const float* x = in;
    if (L.rot.kind != hadamard::RotationKind::none || (L.act && !L.engine)) {
      xq_.assign(in, in + rows * L.k);
      if (L.rot.kind != hadamard::RotationKind::none) L.rot.apply(xq_.data(), rows, L.k);
      quantize_point(L.act, xq_.data(), rows, L.k, l, L.act_points);
      x = xq_.data();
    }
    float* y = out;
    if (group.size() > 1) {
      part_.resize(rows * L.n);
      y = part_.data();
    }
    if (L.engine) {
      if (L.act) {  // attribution only: the int8 engine quantizes its own input the same way
        xq_.assign(in, in + rows * L.k);
        quantize_point(L.act, xq_.data(), rows, L.k, l, L.act_points);
      }
      L.engine->forward(in, rows, y);
    } else if (L.int_act) {  // act.ggml in a group with a linear that is not (F16 or F32 beside it)
      quant::gemm_act(x, L.weight, y, rows, threads_);
    } else {
      quant::gemm_f32(x, stored(L), y, rows, false, threads_);
    }
    check(L, y);
    if (group.size() > 1)
      for (std::size_t t = 0; t < rows; ++t) std::copy_n(y + t * L.n, L.n, out + t * total + col);
    col += L.n;
  }
}

void ForwardOps::quantize_point(const std::optional<QuantSpec>& spec, float* x, std::size_t rows, std::size_t cols,
                                int l, const std::string& point) {
  quantize_point(spec, x, rows, cols, l, std::vector<std::string>{point});
}

void ForwardOps::quantize_point(const std::optional<QuantSpec>& spec, float* x, std::size_t rows, std::size_t cols,
                                int l, const std::vector<std::string>& points) {
  if (!spec) return;
  check_shape(*spec, rows, cols, points[0], l);
  if (log_) before_.assign(x, x + rows * cols);
  const float* fixed = nullptr;
  if (static_point(pm_.recipe, points[0], *spec)) {
    if (pm_.observe) {
      pm_.observe(l, points[0], x, rows, cols);
    } else {
      const auto it = pm_.static_amax.find({l, points[0]});
      if (it == pm_.static_amax.end())
        throw Error("recipe '" + pm_.recipe.name + "': no static scale for " + points[0] +
                    (l >= 0 ? " of layer " + std::to_string(l) : "") + " (calibrate it with --calib FILE)");
      fixed = &it->second;
    }
  }
  if (fixed) quant::fake_quant_static(*spec, x, rows, cols, *fixed);
  else quant::fake_quant(*spec, x, rows, cols);
  if (log_)
    for (const auto& p : points) log_->add(l, p, before_.data(), x, rows * cols);
}

void ForwardOps::finite(const float* x, std::size_t cols, int l, const std::string& tensor, std::size_t rows) const {
  if (!pm_.check_finite) return;
  for (std::size_t i = 0; i < rows * cols; ++i)
    if (!std::isfinite(x[i]))
      throw Error("the float32 reference is not finite: first " + std::string(std::isnan(x[i]) ? "NaN" : "Inf") +
                  " in " + tensor + (l >= 0 ? " of layer " + std::to_string(l) : "") + " (window position " +
                  std::to_string(i / cols) + ")");
}

void ForwardOps::check_shape(const QuantSpec& spec, std::size_t rows, std::size_t cols, const std::string& point,
                             int l) const {
  try {
    quant::check_shape(spec, rows, cols);
  } catch (const Error& e) {
    throw Error("recipe '" + pm_.recipe.name + "': " + point + (l >= 0 ? " of layer " + std::to_string(l) : "") + " (" +
                std::to_string(rows) + "x" + std::to_string(cols) + "): " + e.what());
  }
}

void forward_window(const PreparedModel& pm, std::span<const int> tokens, float* logits, ErrorLog& log,
                    int threads, std::size_t first_logit, const ResidualTap& tap) {
  Window(pm, tokens.size(), log, threads).run(tokens, logits, first_logit, tap);
}

void forward_window_from(const PreparedModel& pm, std::size_t from, std::span<const float> x, float* logits,
                         ErrorLog& log, int threads, std::size_t first_logit) {
  const std::size_t dim = static_cast<std::size_t>(pm.cfg.dim);
  Window w(pm, x.size() / dim, log, threads);
  w.resume(x);
  w.run_from(from, logits, first_logit, {});
}

void forward_stacked(std::span<const PreparedModel* const> pms, std::size_t from, std::span<const float> x,
                     std::span<float* const> logits, std::span<ErrorLog> logs, int threads, std::size_t first_logit) {
  const PreparedModel& pm = *pms[0];
  const std::size_t n = pms.size(), dim = static_cast<std::size_t>(pm.cfg.dim), T = x.size() / dim,
                    vocab = static_cast<std::size_t>(pm.cfg.vocab_size);
  KvCache caches(n, static_cast<std::size_t>(pm.cfg.n_kv_heads), static_cast<std::size_t>(pm.cfg.head_dim()), T);
  std::vector<KvLayer> kv(n);
  std::vector<float> xs(n * T * dim);
  BlockActs acts;
  for (std::size_t i = 0; i < n; ++i) {  // each model's own layer
    kv[i] = caches.layer(i);
    std::copy(x.begin(), x.end(), xs.begin() + static_cast<std::ptrdiff_t>(i * T * dim));
    ForwardOps ops(*pms[i], &logs[i], threads);
    block_forward(ops, static_cast<int>(from), xs.data() + i * T * dim, BlockRows{1, T, 0, &kv[i]}, acts);
  }
  ErrorLog shared;  // stays empty: no point after `from`
  ForwardOps ops(pm, &shared, threads);
  for (std::size_t l = from + 1; l < pm.layers.size(); ++l)
    block_forward(ops, static_cast<int>(l), xs.data(), BlockRows{n, T, 0, kv.data()}, acts);
  // The head on every window's rows [first_logit, T) at once (rows are independent in the
  // final RMSNorm and the GEMM), then each window's logits to its place.
  const std::size_t S = T - first_logit;
  std::vector<float> rows(n * S * dim), out(n * S * vocab);
  for (std::size_t i = 0; i < n; ++i)
    std::copy_n(xs.data() + (i * T + first_logit) * dim, S * dim, rows.data() + i * S * dim);
  head_forward(ops, rows.data(), n * S, 0, out.data(), acts.xn1);
  for (std::size_t i = 0; i < n; ++i)
    std::copy_n(out.data() + i * S * vocab, S * vocab, logits[i] + first_logit * vocab);
  if (!shared.entries().empty()) throw Error("forward_stacked: a quantization point after layer " + std::to_string(from));
}

}  // namespace lowp::accuracy::detail
