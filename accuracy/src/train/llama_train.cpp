// The Llama's training forward and backward passes, block by block (llm.c style: each
// *_forward beside its *_backward, in the order the forward runs them). Names as in the papers:
//   x = E[tokens]
//   per layer:  xn1 = rmsnorm(x) ; q,k,v = xn1 Wq^T, Wk^T, Wv^T ; RoPE(q, k)
//               S = q k^T / sqrt(hd) (causal) ; P = softmax(S) ; att = P v ; x += att Wo^T
//               xn2 = rmsnorm(x) ; g = xn2 Wgate^T ; u = xn2 Wup^T ; h = silu(g) u ; x += h Wdown^T
//   logits = rmsnorm(x) Wcls^T ; loss = mean cross-entropy
// The arithmetic of every forward step is the evaluator's (model/forward.cpp), operation for
// operation, so fp32 logits agree bitwise; tests/train checks it.
#include "train/llama_train.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/gemm.hpp"
#include "model/attention.hpp"

namespace lowp::accuracy::train {
namespace {

enum Lin { kQ = 0, kK, kV, kO, kGate, kUp, kDown, kLinears };
constexpr const char* kLinName[kLinears] = {"wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"};

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  const RngKey k = rng_key(a ^ (b * 0x9e3779b97f4a7c15ULL));
  return (static_cast<std::uint64_t>(k.k1) << 32) | k.k0;
}

// Standard normal from two counter-based uniforms (Box-Muller): the same on every platform.
float normal(std::uint64_t seed, std::uint64_t i) {
  const RngKey key = rng_key(seed);
  const double u1 = (static_cast<double>(random_bits(key, 2 * i)) + 1.0) / 4294967296.0;
  const double u2 = static_cast<double>(random_bits(key, 2 * i + 1)) / 4294967296.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

// out = w * (x * inv) with inv = 1 / sqrt(mean(x^2) + eps), the sum of squares in double.
void rmsnorm_forward(const float* x, const float* w, float* out, float* inv, std::size_t rows, std::size_t dim,
                     float eps, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::ptrdiff_t tt = 0; tt < static_cast<std::ptrdiff_t>(rows); ++tt) {
    const auto t = static_cast<std::size_t>(tt);
    const float* xr = x + t * dim;
    double ss = 0;
    for (std::size_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const auto r = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
    inv[t] = r;
    for (std::size_t i = 0; i < dim; ++i) out[t * dim + i] = w[i] * (xr[i] * r);
  }
}

// dx += inv * (w dy) - x inv^3 / dim * sum(w dy x);  dw += sum over rows of dy * x * inv.
void rmsnorm_backward(const float* x, const float* w, const float* inv, const float* dy, float* dx, float* dw,
                      std::size_t rows, std::size_t dim, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::ptrdiff_t tt = 0; tt < static_cast<std::ptrdiff_t>(rows); ++tt) {
    const auto t = static_cast<std::size_t>(tt);
    const float* xr = x + t * dim;
    const float* g = dy + t * dim;
    double dot = 0;
    for (std::size_t i = 0; i < dim; ++i) dot += static_cast<double>(w[i]) * g[i] * xr[i];
    const double r = inv[t], c = dot * r * r * r / static_cast<double>(dim);
    for (std::size_t i = 0; i < dim; ++i)
      dx[t * dim + i] += static_cast<float>(r * w[i] * g[i] - c * xr[i]);
  }
  // Rows in order (the same at any thread count), a whole row at a time: reading down the
  // columns instead would stream both matrices once per column.
  std::vector<double> acc(dim, 0.0);
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t i = 0; i < dim; ++i) acc[i] += static_cast<double>(dy[t * dim + i]) * x[t * dim + i] * inv[t];
  for (std::size_t i = 0; i < dim; ++i) dw[i] += static_cast<float>(acc[i]);
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

void swiglu_forward(const float* g, const float* u, float* h, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) h[i] = silu(g[i]) * u[i];
}

// h = silu(g) u: dg = dh u silu'(g), silu'(g) = s (1 + g (1 - s)) with s = sigmoid(g); du = dh silu(g).
void swiglu_backward(const float* g, const float* u, const float* dh, float* dg, float* du, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(g[i])));
    dg[i] = static_cast<float>(dh[i] * u[i] * s * (1.0 + g[i] * (1.0 - s)));
    du[i] = static_cast<float>(dh[i] * g[i] * s);
  }
}

bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

LlamaModel init_model(const LlamaConfig& c, std::uint64_t seed, bool tied) {
  validate(c, "the training config");
  LlamaModel m;
  m.config = c;
  m.source = "llama2c";
  m.path = "(initial weights)";
  std::uint64_t tensor = 0;
  const auto fill = [&](std::size_t n, float std_dev) {
    std::vector<float> v(n);
    const std::uint64_t s = mix(seed, ++tensor);
    for (std::size_t i = 0; i < n; ++i) v[i] = std_dev * normal(s, i);
    return v;
  };
  const auto dim = static_cast<std::size_t>(c.dim), kv = static_cast<std::size_t>(c.kv_dim()),
             hidden = static_cast<std::size_t>(c.hidden_dim), vocab = static_cast<std::size_t>(c.vocab_size);
  const float s = 0.02f, so = 0.02f / std::sqrt(2.0f * static_cast<float>(c.n_layers));
  m.token_embedding = fill(vocab * dim, s);
  m.layers.resize(static_cast<std::size_t>(c.n_layers));
  for (auto& l : m.layers) {
    l.attn_norm.assign(dim, 1.0f);
    l.ffn_norm.assign(dim, 1.0f);
    l.wq = fill(dim * dim, s);
    l.wk = fill(kv * dim, s);
    l.wv = fill(kv * dim, s);
    l.wo = fill(dim * dim, so);
    l.w_gate = fill(hidden * dim, s);
    l.w_up = fill(hidden * dim, s);
    l.w_down = fill(dim * hidden, so);
  }
  m.final_norm.assign(dim, 1.0f);
  if (!tied) m.classifier = fill(vocab * dim, s);
  return m;
}

TrainLlama::TrainLlama(const LlamaModel& m, const quant::LinearRecipe& linear)
    : TrainLlama(m, [&](int, std::size_t) { return linear; }) {}

TrainLlama::TrainLlama(const LlamaModel& m, const LinearFor& linear_for, const quant::LinearRecipe* classifier)
    : c_(m.config),
      dim_(static_cast<std::size_t>(c_.dim)),
      kv_(static_cast<std::size_t>(c_.kv_dim())),
      hd_(static_cast<std::size_t>(c_.head_dim())),
      hidden_(static_cast<std::size_t>(c_.hidden_dim)),
      vocab_(static_cast<std::size_t>(c_.vocab_size)) {
  validate(m);
  embedding_ = m.token_embedding;
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const LayerWeights& w = m.layers[l];
    Layer L;
    L.attn_norm = w.attn_norm;
    L.ffn_norm = w.ffn_norm;
    const std::vector<float>* src[kLinears] = {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down};
    const std::size_t in[kLinears] = {dim_, dim_, dim_, dim_, dim_, dim_, hidden_};
    const std::size_t out[kLinears] = {dim_, kv_, kv_, dim_, hidden_, hidden_, dim_};
    for (int i = 0; i < kLinears; ++i) {
      L.lin.emplace_back(linear_for(i, l), in[i], out[i], false);
      L.lin.back().weight() = *src[i];
    }
    layers_.push_back(std::move(L));
  }
  final_norm_ = m.final_norm;
  classifier_ = m.classifier;
  if (classifier && classifier->name != "fp32") {
    cls_ = std::make_unique<quant::QuantLinear>(*classifier, dim_, vocab_, false);
    weights_changed();
  }
  zero_grad();
  rope_tables(c_, rope_cos_, rope_sin_);
}

detail::AttentionShape TrainLlama::attention_shape() const {
  return {B_, T_, static_cast<std::size_t>(c_.n_heads), static_cast<std::size_t>(c_.n_kv_heads), hd_};
}

void TrainLlama::zero_grad() {
  d_embedding_.assign(embedding_.size(), 0.0f);
  for (auto& L : layers_) {
    L.d_attn_norm.assign(dim_, 0.0f);
    L.d_ffn_norm.assign(dim_, 0.0f);
    for (auto& q : L.lin) std::fill(q.weight_grad().begin(), q.weight_grad().end(), 0.0f);
  }
  d_final_norm_.assign(dim_, 0.0f);
  d_classifier_.assign(classifier_.size(), 0.0f);
}

std::vector<TrainLlama::Param> TrainLlama::params() {
  std::vector<LayerParams> layers;
  for (Layer& L : layers_) {
    LayerParams lp{&L.attn_norm, &L.d_attn_norm, &L.ffn_norm, &L.d_ffn_norm, {}, {}};
    for (int i = 0; i < kLinears; ++i) {
      lp.w[i] = &L.lin[i].weight();
      lp.dw[i] = &L.lin[i].weight_grad();
    }
    layers.push_back(lp);
  }
  return param_list(embedding_, d_embedding_, layers, final_norm_, d_final_norm_, classifier_, d_classifier_);
}

void TrainLlama::weights_changed() {
  for (auto& L : layers_)
    for (auto& q : L.lin) q.invalidate_weight_cache();
  if (cls_) cls_->weight() = classifier_.empty() ? embedding_ : classifier_;  // drops its cache too
}

std::vector<std::uint8_t> TrainLlama::save_linear_state() const {
  std::vector<std::uint8_t> b;
  std::vector<const quant::QuantLinear*> all;
  for (const auto& L : layers_)
    for (const auto& q : L.lin) all.push_back(&q);
  if (cls_) all.push_back(cls_.get());
  for (const quant::QuantLinear* q : all) {
    const std::vector<std::uint8_t> s = q->save_state();
    const std::uint64_t n = s.size();
    const auto* p = reinterpret_cast<const std::uint8_t*>(&n);
    b.insert(b.end(), p, p + sizeof n);
    b.insert(b.end(), s.begin(), s.end());
  }
  return b;
}

void TrainLlama::load_linear_state(std::span<const std::uint8_t> bytes) {
  std::size_t at = 0;
  for (auto& L : layers_)
    for (auto& q : L.lin) {
      std::uint64_t n = 0;
      if (bytes.size() - at < sizeof n) throw Error("linear state: truncated");
      std::memcpy(&n, bytes.data() + at, sizeof n);
      at += sizeof n;
      if (bytes.size() - at < n) throw Error("linear state: truncated");
      q.load_state(bytes.subspan(at, n));
      at += n;
    }
  if (cls_) {
    std::uint64_t n = 0;
    if (bytes.size() - at < sizeof n) throw Error("linear state: truncated");
    std::memcpy(&n, bytes.data() + at, sizeof n);
    at += sizeof n;
    if (bytes.size() - at < n) throw Error("linear state: truncated");
    cls_->load_state(bytes.subspan(at, n));
    at += n;
  }
  if (at != bytes.size()) throw Error("linear state: " + std::to_string(bytes.size() - at) + " trailing bytes");
}

void TrainLlama::defer_amax(bool on) {
  for (auto& L : layers_)
    for (auto& q : L.lin) q.defer_amax(on);
  if (cls_) cls_->defer_amax(on);
}

std::vector<float> TrainLlama::take_pending_amax() {
  std::vector<float> out;
  const auto take = [&](quant::QuantLinear& q) {
    const std::vector<float> a = q.take_pending_amax();
    out.insert(out.end(), a.begin(), a.end());
  };
  for (auto& L : layers_)
    for (auto& q : L.lin) take(q);
  if (cls_) take(*cls_);
  return out;
}

void TrainLlama::commit_amax(std::span<const float> amax) {
  std::size_t at = 0;
  const auto commit = [&](quant::QuantLinear& q) {
    const std::size_t n = q.take_pending_amax().size();  // its history count (pending is cleared anyway)
    if (amax.size() - at < n) throw Error("commit_amax: " + std::to_string(amax.size()) + " values are too few");
    q.commit_amax(amax.subspan(at, n));
    at += n;
  };
  for (auto& L : layers_)
    for (auto& q : L.lin) commit(q);
  if (cls_) commit(*cls_);
  if (at != amax.size()) throw Error("commit_amax: " + std::to_string(amax.size() - at) + " values too many");
}

void TrainLlama::collect_stats(bool on) {
  for (auto& L : layers_)
    for (auto& q : L.lin) q.collect_stats(on);
  if (cls_) cls_->collect_stats(on);
}

std::vector<TrainLlama::LinearStats> TrainLlama::take_stats() {
  std::vector<LinearStats> out;
  for (std::size_t l = 0; l < layers_.size(); ++l)
    for (int i = 0; i < kLinears; ++i)
      out.push_back({static_cast<int>(l), kLinName[i], layers_[l].lin[static_cast<std::size_t>(i)].take_stats()});
  if (cls_) out.push_back({-1, "classifier", cls_->take_stats()});
  return out;
}

LlamaModel TrainLlama::to_model() const {
  std::vector<TrainedLayer> layers;
  for (const auto& L : layers_) {
    TrainedLayer t{&L.attn_norm, &L.ffn_norm, {}};
    for (std::size_t i = 0; i < 7; ++i) t.linear[i] = &L.lin[i].weight();
    layers.push_back(t);
  }
  return trained_model(c_, embedding_, layers, final_norm_, classifier_);
}

// ---------------------------------------------------------------- RoPE

void TrainLlama::rope_forward(float* x, std::size_t heads) const {
  const std::size_t half = hd_ / 2;
  for (std::size_t b = 0; b < B_; ++b)
    for (std::size_t t = 0; t < T_; ++t)
      for (std::size_t h = 0; h < heads; ++h) {
        float* v = x + ((b * T_ + t) * heads + h) * hd_;
        for (std::size_t i = 0; i < half; ++i) {
          const float c = rope_cos_[t * half + i], s = rope_sin_[t * half + i];
          const float a = v[2 * i], bb = v[2 * i + 1];
          v[2 * i] = a * c - bb * s;
          v[2 * i + 1] = a * s + bb * c;
        }
      }
}

// The transpose of the rotation: (da, db) = (dv0 c + dv1 s, -dv0 s + dv1 c).
void TrainLlama::rope_backward(float* dx, std::size_t heads) const {
  const std::size_t half = hd_ / 2;
  for (std::size_t b = 0; b < B_; ++b)
    for (std::size_t t = 0; t < T_; ++t)
      for (std::size_t h = 0; h < heads; ++h) {
        float* v = dx + ((b * T_ + t) * heads + h) * hd_;
        for (std::size_t i = 0; i < half; ++i) {
          const float c = rope_cos_[t * half + i], s = rope_sin_[t * half + i];
          const float d0 = v[2 * i], d1 = v[2 * i + 1];
          v[2 * i] = d0 * c + d1 * s;
          v[2 * i + 1] = -d0 * s + d1 * c;
        }
      }
}

// ---------------------------------------------------------------- whole model

double TrainLlama::forward(std::span<const int> tokens, std::span<const int> targets, std::size_t B, std::size_t T,
                           int threads, std::uint64_t seed) {
  if (B == 0 || T == 0 || tokens.size() != B * T || (!targets.empty() && targets.size() != B * T))
    throw Error("train forward: " + std::to_string(tokens.size()) + " tokens for batch " + std::to_string(B) +
                " x window " + std::to_string(T));
  if (T > static_cast<std::size_t>(c_.seq_len))
    throw Error("train forward: window " + std::to_string(T) + " is beyond seq_len " + std::to_string(c_.seq_len));
  for (int t : tokens)
    if (t < 0 || static_cast<std::size_t>(t) >= vocab_)
      throw Error("train forward: token " + std::to_string(t) + " outside the vocabulary of " + std::to_string(vocab_));
  for (int y : targets)
    if (y < 0 || static_cast<std::size_t>(y) >= vocab_)
      throw Error("train forward: target " + std::to_string(y) + " outside the vocabulary of " + std::to_string(vocab_));
  threads = threads > 0 ? threads : omp_get_max_threads();
  B_ = B;
  T_ = T;
  tokens_.assign(tokens.begin(), tokens.end());
  targets_.assign(targets.begin(), targets.end());
  const std::size_t R = B * T;
  std::vector<float> x(R * dim_), tmp(R * dim_);
  for (std::size_t r = 0; r < R; ++r)
    std::copy_n(embedding_.data() + static_cast<std::size_t>(tokens[r]) * dim_, dim_, x.data() + r * dim_);

  for (std::size_t l = 0; l < layers_.size(); ++l) {
    Layer& L = layers_[l];
    const std::uint64_t ls = mix(seed, l + 1);
    // attention block
    L.x_in = x;
    L.inv1.resize(R);
    L.xn1.resize(R * dim_);
    rmsnorm_forward(x.data(), L.attn_norm.data(), L.xn1.data(), L.inv1.data(), R, dim_, c_.norm_eps, threads);
    L.q.resize(R * dim_);
    L.k.resize(R * kv_);
    L.v.resize(R * kv_);
    L.lin[kQ].forward(L.xn1.data(), R, L.q.data(), mix(ls, kQ));
    L.lin[kK].forward(L.xn1.data(), R, L.k.data(), mix(ls, kK));
    L.lin[kV].forward(L.xn1.data(), R, L.v.data(), mix(ls, kV));
    rope_forward(L.q.data(), static_cast<std::size_t>(c_.n_heads));
    rope_forward(L.k.data(), static_cast<std::size_t>(c_.n_kv_heads));
    L.att.resize(R * dim_);
    L.p.resize(B * static_cast<std::size_t>(c_.n_heads) * T * T);
    detail::attention_forward(attention_shape(), L.q.data(), L.k.data(), L.v.data(), L.att.data(), L.p.data(), threads);
    L.lin[kO].forward(L.att.data(), R, tmp.data(), mix(ls, kO));
    for (std::size_t i = 0; i < R * dim_; ++i) x[i] += tmp[i];
    // feed-forward block
    L.x_mid = x;
    L.inv2.resize(R);
    L.xn2.resize(R * dim_);
    rmsnorm_forward(x.data(), L.ffn_norm.data(), L.xn2.data(), L.inv2.data(), R, dim_, c_.norm_eps, threads);
    L.g.resize(R * hidden_);
    L.u.resize(R * hidden_);
    L.h.resize(R * hidden_);
    L.lin[kGate].forward(L.xn2.data(), R, L.g.data(), mix(ls, kGate));
    L.lin[kUp].forward(L.xn2.data(), R, L.u.data(), mix(ls, kUp));
    swiglu_forward(L.g.data(), L.u.data(), L.h.data(), R * hidden_);
    L.lin[kDown].forward(L.h.data(), R, tmp.data(), mix(ls, kDown));
    for (std::size_t i = 0; i < R * dim_; ++i) x[i] += tmp[i];
  }
  x_final_ = std::move(x);
  inv_final_.resize(R);
  xn_final_.resize(R * dim_);
  rmsnorm_forward(x_final_.data(), final_norm_.data(), xn_final_.data(), inv_final_.data(), R, dim_, c_.norm_eps,
                  threads);
  logits_.resize(R * vocab_);
  const std::vector<float>& wcls = classifier_.empty() ? embedding_ : classifier_;
  if (cls_)
    cls_->forward(xn_final_.data(), R, logits_.data(), mix(seed, 0xc1a55));
  else
    quant::gemm_f32(xn_final_.data(), wcls.data(), logits_.data(), R, vocab_, dim_, false, threads);
  if (targets.empty()) return std::numeric_limits<double>::quiet_NaN();

  // Cross-entropy: log-sum-exp per row in double, rows summed in order; the sums are kept for
  // the backward's softmax.
  double total = 0;
  ce_sum_.resize(R);
  for (std::size_t r = 0; r < R; ++r) {
    const float* row = logits_.data() + r * vocab_;
    const int y = targets[r];
    const float mx = *std::max_element(row, row + vocab_);
    double se = 0;
    for (std::size_t j = 0; j < vocab_; ++j) se += std::exp(static_cast<double>(row[j]) - mx);
    ce_sum_[r] = se;
    total += std::log(se) + mx - row[y];
  }
  return total / static_cast<double>(R);
}

void TrainLlama::backward(int threads, std::uint64_t seed, std::size_t loss_rows) {
  const std::size_t R = B_ * T_;
  if (R == 0 || targets_.size() != R) throw Error("train backward: no forward pass with targets to differentiate");
  threads = threads > 0 ? threads : omp_get_max_threads();
  const double rows = static_cast<double>(loss_rows > 0 ? loss_rows : R);
  // Cross-entropy: dlogits = (softmax - onehot) / rows, in place.
  std::vector<float>& dlogits = logits_;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::ptrdiff_t rr = 0; rr < static_cast<std::ptrdiff_t>(R); ++rr) {
    const auto r = static_cast<std::size_t>(rr);
    float* row = dlogits.data() + r * vocab_;
    const float mx = *std::max_element(row, row + vocab_);
    const double se = ce_sum_[r];  // the forward's, summed exactly so
    for (std::size_t j = 0; j < vocab_; ++j) {
      const double p = std::exp(static_cast<double>(row[j]) - mx) / se;
      row[j] = static_cast<float>((p - (static_cast<int>(j) == targets_[r] ? 1.0 : 0.0)) / rows);
    }
  }
  // Classifier: dxn = dlogits Wcls; dWcls += dlogits^T xn.
  std::vector<float>& wcls = classifier_.empty() ? embedding_ : classifier_;
  std::vector<float>& dwcls = classifier_.empty() ? d_embedding_ : d_classifier_;
  std::vector<float> dx(R * dim_, 0.0f), dxn(R * dim_);
  if (cls_) {
    std::vector<float>& g = cls_->weight_grad();
    std::fill(g.begin(), g.end(), 0.0f);
    cls_->backward(dlogits.data(), dxn.data(), mix(seed, 0xc1a55));
    for (std::size_t i = 0; i < g.size(); ++i) dwcls[i] += g[i];
  } else {
    using quant::Layout;
    quant::gemm_f32(dlogits.data(), Layout::as_is, wcls.data(), Layout::transposed, dxn.data(), R, dim_, vocab_, false,
                    threads);
    quant::gemm_f32(dlogits.data(), Layout::transposed, xn_final_.data(), Layout::transposed, dwcls.data(), vocab_,
                    dim_, R, true, threads);
  }
  rmsnorm_backward(x_final_.data(), final_norm_.data(), inv_final_.data(), dxn.data(), dx.data(),
                   d_final_norm_.data(), R, dim_, threads);

  std::vector<float> dtmp(R * dim_), dh(R * hidden_), dg(R * hidden_), du(R * hidden_), datt(R * dim_);
  std::vector<float> dq, dk, dv;
  for (std::size_t li = layers_.size(); li-- > 0;) {
    Layer& L = layers_[li];
    const std::uint64_t ls = mix(mix(seed, li + 1), 0xbac);
    // feed-forward block: dx flows through unchanged and into the branch.
    L.lin[kDown].backward(dx.data(), dh.data(), mix(ls, kDown));
    swiglu_backward(L.g.data(), L.u.data(), dh.data(), dg.data(), du.data(), R * hidden_);
    L.lin[kGate].backward(dg.data(), dxn.data(), mix(ls, kGate));
    L.lin[kUp].backward(du.data(), dtmp.data(), mix(ls, kUp));
    for (std::size_t i = 0; i < R * dim_; ++i) dxn[i] += dtmp[i];
    rmsnorm_backward(L.x_mid.data(), L.ffn_norm.data(), L.inv2.data(), dxn.data(), dx.data(), L.d_ffn_norm.data(),
                     R, dim_, threads);
    // attention block
    L.lin[kO].backward(dx.data(), datt.data(), mix(ls, kO));
    dq.resize(R * dim_);
    dk.resize(R * kv_);
    dv.resize(R * kv_);
    detail::attention_backward(attention_shape(), L.q.data(), L.k.data(), L.v.data(), L.p.data(), datt.data(), dq.data(),
                               dk.data(), dv.data(), threads);
    rope_backward(dq.data(), static_cast<std::size_t>(c_.n_heads));
    rope_backward(dk.data(), static_cast<std::size_t>(c_.n_kv_heads));
    L.lin[kQ].backward(dq.data(), dxn.data(), mix(ls, kQ));
    L.lin[kK].backward(dk.data(), dtmp.data(), mix(ls, kK));
    for (std::size_t i = 0; i < R * dim_; ++i) dxn[i] += dtmp[i];
    L.lin[kV].backward(dv.data(), dtmp.data(), mix(ls, kV));
    for (std::size_t i = 0; i < R * dim_; ++i) dxn[i] += dtmp[i];
    rmsnorm_backward(L.x_in.data(), L.attn_norm.data(), L.inv1.data(), dxn.data(), dx.data(), L.d_attn_norm.data(),
                     R, dim_, threads);
  }
  // Embedding: rows scattered in token order.
  for (std::size_t r = 0; r < R; ++r) {
    float* d = d_embedding_.data() + static_cast<std::size_t>(tokens_[r]) * dim_;
    for (std::size_t i = 0; i < dim_; ++i) d[i] += dx[r * dim_ + i];
  }
}

std::string TrainLlama::first_nonfinite_activation() const {
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    const std::pair<const char*, const std::vector<float>*> acts[] = {
        {"x", &L.x_in},   {"xn1", &L.xn1}, {"q", &L.q},     {"k", &L.k}, {"v", &L.v},   {"p", &L.p},
        {"att", &L.att}, {"x_mid", &L.x_mid}, {"xn2", &L.xn2}, {"g", &L.g}, {"u", &L.u}, {"h", &L.h}};
    for (const auto& [name, v] : acts)
      if (!all_finite(*v)) return "layers." + std::to_string(l) + "." + name;
  }
  if (!all_finite(x_final_)) return "x_final";
  if (!all_finite(xn_final_)) return "norm output";
  if (!all_finite(logits_)) return "logits";
  return "";
}

}  // namespace lowp::accuracy::train
