// The Llama on ScaledTensors: forward and backward block by block, in llama_train.cpp's order
//   x = E[tokens]
//   per layer:  xn1 = rmsnorm(x) ; q,k,v = xn1 Wq^T, Wk^T, Wv^T ; RoPE(q, k)
//               S = q k^T / sqrt(hd) (causal) ; P = softmax(S) ; att = P v ; x += att Wo^T
//               xn2 = rmsnorm(x) ; g = xn2 Wgate^T ; u = xn2 Wup^T ; h = silu(g) u ; x += h Wdown^T
//   logits = rmsnorm(x) Wcls^T ; loss = mean cross-entropy
// with each tensor a quant::ScaledTensor and each step a quant op (its scale rule in
// lowp/quant/scaled_tensor.hpp). Every GEMM casts its operands to the GEMM formats (weights and
// activations E4M3, gradients E5M2), accumulates in float32 and stores its result, as every other
// op does, in the forward or backward storage format (by default the same E4M3 / E5M2; Scalify's
// FP8 experiments keep them in float16: `scalify.fwd` / `scalify.bwd` in a recipe file).
//
// Where the scales are measured (nothing else is; there is no amax anywhere):
//  - the weights: once per optimizer step, the float32 master weight is cast with scale
//    p2(RMS(w)) (scaled_auto), as Scalify keeps its model state as scaled tensors rescaled after
//    each update and as the test-only ScaledAdam (tests/quant/scaled_optim.cpp) does;
//  - the gradient entering the residual stream from each RMSNorm (two per layer and the final
//    norm): dynamic_rescale with the RMS statistic. The scale rules assume unit-variance data,
//    which the backward of a trained network drifts away from; Scalify (Balança et al. 2024, §4,
//    "Algorithm 5: custom LayerNorm with backward gradient dynamic rescaling") places exactly one
//    such dynamic_rescale_l2_grad at the input of every LayerNorm, in each residual path.
#include "train/scalify_llama.hpp"

#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <cmath>
#include <limits>

#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/parallel.hpp"
#include "model/layers.hpp"

namespace lowp::accuracy::train {
namespace {

using quant::ScaledTensor;
enum Lin { kQ = 0, kK, kV, kO, kGate, kUp, kDown, kLinears };

// The float32 master weight as a scaled tensor of `f`: scale p2(RMS(w)).
ScaledTensor cast_weight(const std::vector<float>& w, std::size_t rows, std::size_t cols, const Format& f) {
  return quant::scaled_auto(w, rows, cols, f, quant::RescaleStat::rms);
}

// g += values of t (the optimizer reads float32 gradients).
void accumulate(std::vector<float>& g, const ScaledTensor& t) {
  for (std::size_t i = 0; i < g.size(); ++i) g[i] += t.data[i] * t.scale;
}

// Rows of `table` (a shape op: the scale is kept, the data are moved).
ScaledTensor gather_rows(const ScaledTensor& table, std::span<const int> idx) {
  ScaledTensor r{table.format, idx.size(), table.cols, std::vector<float>(idx.size() * table.cols), table.scale};
  for (std::size_t i = 0; i < idx.size(); ++i)
    std::copy_n(table.data.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(idx[i]) * table.cols),
                table.cols, r.data.begin() + static_cast<std::ptrdiff_t>(i * table.cols));
  return r;
}

// Softmax of each row over columns 0..i (row i of a causal T x T score matrix), zeros after:
// the softmax rule (unit scale, values computed from scale * data in double). Not attention.hpp's
// softmax_row: that one works on float32 scores with model/exp.hpp's float exp, not on a scaled
// tensor's values in double, so Scalify's P would change.
ScaledTensor causal_softmax(const ScaledTensor& s, const Format& f) {
  const std::size_t T = s.rows;
  std::vector<float> p(T * T, 0.0f);
  std::vector<double> e(T);
  for (std::size_t i = 0; i < T; ++i) {
    double mx = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j <= i; ++j) mx = std::max(mx, static_cast<double>(s.data[i * T + j]) * s.scale);
    double z = 0;
    for (std::size_t j = 0; j <= i; ++j) z += e[j] = std::exp(static_cast<double>(s.data[i * T + j]) * s.scale - mx);
    for (std::size_t j = 0; j <= i; ++j) p[i * T + j] = static_cast<float>(e[j] / z);
  }
  return quant::scaled_from_data(std::move(p), T, T, f, 1.0);
}

// Pieces computed in parallel jobs are written into one tensor; their scales come from the same
// rules applied to the same scales, so they agree (checked: a mismatch is a bug, not bad input).
void put_block(ScaledTensor& dst, const ScaledTensor& src, std::size_t row0, std::size_t col0) {
  for (std::size_t i = 0; i < src.rows; ++i)
    std::copy_n(src.data.begin() + static_cast<std::ptrdiff_t>(i * src.cols), src.cols,
                dst.data.begin() + static_cast<std::ptrdiff_t>((row0 + i) * dst.cols + col0));
}
float common_scale(const std::vector<float>& scales, const char* what) {
  for (float s : scales)
    if (s != scales.front()) throw Error(std::string("scalify: the ") + what + " blocks have different scales");
  return scales.front();
}

// Runs f(job) for job in [0, n) on `threads` threads; the first exception is rethrown after.
template <class F>
void parallel_jobs(std::size_t n, int threads, F f) {
  FirstError err;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::ptrdiff_t j = 0; j < static_cast<std::ptrdiff_t>(n); ++j) err.run([&] { f(static_cast<std::size_t>(j)); });
  err.rethrow();
}

// Bounds OpenMP's team size for the quant ops' GEMMs during one pass.
struct Threads {
  int saved = omp_get_max_threads();
  explicit Threads(int n) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved); }
};

// t in format f: itself when it already is, else the cast (the scale is kept).
ScaledTensor to(const ScaledTensor& t, const Format& f) { return t.format == f ? t : quant::cast(t, f); }

bool all_finite(const ScaledTensor& t) {
  return std::all_of(t.data.begin(), t.data.end(), [](float x) { return std::isfinite(x); });
}

}  // namespace

template <class L>
auto ScalifyLlama::tensors(L& layer, bool grad) {
  LayerTensors<std::conditional_t<std::is_const_v<L>, const std::vector<float>, std::vector<float>>> t{};
  for (std::size_t i = 0; i < t.size(); ++i)
    if (const auto kind = detail::kLayerTensors[i].linear)
      t[i] = grad ? &layer.dw[static_cast<std::size_t>(*kind)] : &layer.w[static_cast<std::size_t>(*kind)];
  t[detail::layer_row(&LayerWeights::attn_norm)] = grad ? &layer.d_attn_norm : &layer.attn_norm;
  t[detail::layer_row(&LayerWeights::ffn_norm)] = grad ? &layer.d_ffn_norm : &layer.ffn_norm;
  return t;
}

ScalifyLlama::ScalifyLlama(const LlamaModel& m, const ScalifyConfig& cfg)
    : c_(m.config),
      cfg_(cfg),
      dim_(static_cast<std::size_t>(c_.dim)),
      kv_(static_cast<std::size_t>(c_.kv_dim())),
      hd_(static_cast<std::size_t>(c_.head_dim())),
      qd_(static_cast<std::size_t>(c_.q_dim())),
      vocab_(static_cast<std::size_t>(c_.vocab_size)) {
  validate(m);
  embedding_ = m.token_embedding;
  for (const LayerWeights& w : m.layers) {
    Layer L;
    const auto dst = tensors(L, false);
    for (std::size_t i = 0; i < dst.size(); ++i) {
      const detail::TensorSpec& t = detail::kLayerTensors[i];
      if (dst[i]) *dst[i] = w.*t.layer_member;
      else if ((w.*t.layer_member).present())
        throw Error("the scalify recipe does not train " + std::string(t.optional) + " (" + m.path + " has them)");
    }
    layers_.push_back(std::move(L));
  }
  final_norm_ = m.final_norm;
  classifier_ = m.classifier;
  weights_changed();
  zero_grad();
  detail::rope_tables(c_, static_cast<std::size_t>(c_.seq_len), rope_cos_, rope_sin_);
}

void ScalifyLlama::weights_changed() {
  const Format& f = cfg_.weight;
  emb_ = cast_weight(embedding_, vocab_, dim_, f);
  for (Layer& L : layers_) {
    L.gain1 = cast_weight(L.attn_norm, 1, dim_, f);
    L.gain2 = cast_weight(L.ffn_norm, 1, dim_, f);
    for (int i = 0; i < kLinears; ++i) {
      const detail::TensorSpec& t = detail::linear_tensor(static_cast<LinearKind>(i));
      L.lw[i] = cast_weight(L.w[i], detail::extent(c_, t.rows), detail::extent(c_, t.cols), f);
    }
  }
  gain_final_ = cast_weight(final_norm_, 1, dim_, f);
  if (!classifier_.empty()) cls_ = cast_weight(classifier_, vocab_, dim_, f);
}

void ScalifyLlama::zero_grad() {
  d_embedding_.assign(embedding_.size(), 0.0f);
  for (Layer& L : layers_) {
    L.d_attn_norm.assign(dim_, 0.0f);
    L.d_ffn_norm.assign(dim_, 0.0f);
    for (int i = 0; i < kLinears; ++i) L.dw[i].assign(L.w[i].size(), 0.0f);
  }
  d_final_norm_.assign(dim_, 0.0f);
  d_classifier_.assign(classifier_.size(), 0.0f);
}

std::vector<TrainParam> ScalifyLlama::params() {
  std::vector<LayerParams> layers;
  for (Layer& L : layers_) layers.push_back({tensors(L, false), tensors(L, true)});
  return param_list(embedding_, d_embedding_, layers, final_norm_, d_final_norm_, classifier_, d_classifier_);
}

LlamaModel ScalifyLlama::to_model() const {
  std::vector<LayerTensors<const std::vector<float>>> layers;
  for (const Layer& L : layers_) layers.push_back(tensors(L, false));
  return trained_model(c_, embedding_, layers, final_norm_, classifier_);
}

void ScalifyLlama::load_linear_state(std::span<const std::uint8_t> bytes) {
  if (!bytes.empty())
    throw Error("linear state: the scalify model keeps none, but " + std::to_string(bytes.size()) + " bytes were saved");
}

// ---------------------------------------------------------------- RoPE

// An orthogonal rotation of pairs (model/layers.hpp's, on the data): the scale is kept, the
// rotated data are cast again. `inverse` applies the transpose (the backward pass).
ScaledTensor ScalifyLlama::rope(const ScaledTensor& x, std::size_t heads, bool inverse) const {
  std::vector<float> d = x.data;
  (inverse ? detail::rope_backward : detail::rope_forward)(d.data(), rope_cos_.data(), rope_sin_.data(), B_, T_, heads,
                                                           hd_);
  return quant::scaled_from_data(std::move(d), x.rows, x.cols, x.format, x.scale);
}

// ---------------------------------------------------------------- attention

// Per sequence and head: S = Q_h K_g^T (matmul rule) * 1/sqrt(hd) (mul_scalar rule),
// P = causal softmax(S) (unit scale), att_h = P V_g (matmul rule). Not attention.hpp's
// attention_forward (nor the block's attention): each of those three steps is a ScaledTensor op
// that casts its result to the forward format under its scale rule, which float32 GEMMs with a
// fused softmax do not.
ScaledTensor ScalifyLlama::attention_forward(Layer& L, int threads) const {
  const auto heads = static_cast<std::size_t>(c_.n_heads);
  const std::size_t group = heads / static_cast<std::size_t>(c_.n_kv_heads), T = T_;
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd_));
  const Format &a = cfg_.act, &fs = cfg_.fwd;
  ScaledTensor att{fs, B_ * T, qd_, std::vector<float>(B_ * T * qd_), 1.0f};
  std::vector<float> scales(B_ * heads);
  L.p.assign(B_ * heads, ScaledTensor{});
  parallel_jobs(B_ * heads, threads, [&](std::size_t job) {
    const std::size_t b = job / heads, h = job % heads, g = h / group;
    const ScaledTensor qh = to(quant::slice(L.q, b * T, (b + 1) * T, h * hd_, (h + 1) * hd_), a);
    const ScaledTensor kg = to(quant::slice(L.k, b * T, (b + 1) * T, g * hd_, (g + 1) * hd_), a);
    const ScaledTensor vg = to(quant::slice(L.v, b * T, (b + 1) * T, g * hd_, (g + 1) * hd_), a);
    const ScaledTensor s = quant::mul_scalar(quant::matmul_nt(qh, kg, fs), inv_sqrt);
    L.p[job] = causal_softmax(s, fs);
    const ScaledTensor oh = quant::matmul(to(L.p[job], a), vg, fs);
    put_block(att, oh, b * T, h * hd_);
    scales[job] = oh.scale;
  });
  att.scale = common_scale(scales, "attention output");
  return att;
}

// dP = dO V^T; dV += P^T dO; dS = softmax_backward(P, dP) / sqrt(hd); dQ = dS K; dK += dS^T Q.
// Jobs are (sequence, KV head): the heads sharing a KV head add into dK, dV in head order.
void ScalifyLlama::attention_backward(Layer& L, const ScaledTensor& datt, ScaledTensor& dq, ScaledTensor& dk,
                                      ScaledTensor& dv, int threads) const {
  const auto heads = static_cast<std::size_t>(c_.n_heads), kvh = static_cast<std::size_t>(c_.n_kv_heads);
  const std::size_t group = heads / kvh, T = T_;
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd_));
  const Format &a = cfg_.act, &gr = cfg_.grad, &gf = cfg_.bwd;
  dq = ScaledTensor{gf, B_ * T, qd_, std::vector<float>(B_ * T * qd_), 1.0f};
  dk = ScaledTensor{gf, B_ * T, kv_, std::vector<float>(B_ * T * kv_), 1.0f};
  dv = dk;
  std::vector<float> sq(B_ * heads), sk(B_ * kvh), sv(B_ * kvh);
  parallel_jobs(B_ * kvh, threads, [&](std::size_t job) {
    const std::size_t b = job / kvh, g = job % kvh;
    const ScaledTensor kg = to(quant::slice(L.k, b * T, (b + 1) * T, g * hd_, (g + 1) * hd_), a);
    const ScaledTensor vg = to(quant::slice(L.v, b * T, (b + 1) * T, g * hd_, (g + 1) * hd_), a);
    ScaledTensor dkg, dvg;
    for (std::size_t h = g * group; h < (g + 1) * group; ++h) {
      const ScaledTensor qh = to(quant::slice(L.q, b * T, (b + 1) * T, h * hd_, (h + 1) * hd_), a);
      const ScaledTensor doh = to(quant::slice(datt, b * T, (b + 1) * T, h * hd_, (h + 1) * hd_), gr);
      const ScaledTensor& P = L.p[b * heads + h];
      const ScaledTensor dp = quant::matmul_nt(doh, vg, gf);
      const ScaledTensor dvh = quant::matmul(quant::transpose(to(P, a)), doh, gf);
      const ScaledTensor ds = to(quant::mul_scalar(quant::softmax_backward(P, dp), inv_sqrt, gf), gr);
      const ScaledTensor dqh = quant::matmul(ds, kg, gf);
      const ScaledTensor dkh = quant::matmul(quant::transpose(ds), qh, gf);
      dkg = h == g * group ? dkh : quant::add(dkg, dkh, gf);
      dvg = h == g * group ? dvh : quant::add(dvg, dvh, gf);
      put_block(dq, dqh, b * T, h * hd_);
      sq[b * heads + h] = dqh.scale;
    }
    put_block(dk, dkg, b * T, g * hd_);
    put_block(dv, dvg, b * T, g * hd_);
    sk[job] = dkg.scale;
    sv[job] = dvg.scale;
  });
  dq.scale = common_scale(sq, "dQ");
  dk.scale = common_scale(sk, "dK");
  dv.scale = common_scale(sv, "dV");
}

// ---------------------------------------------------------------- whole model

double ScalifyLlama::forward(std::span<const int> tokens, std::span<const int> targets, std::size_t B, std::size_t T,
                             int threads, std::uint64_t) {
  detail::check_batch(tokens, targets, B, T, static_cast<std::size_t>(c_.seq_len), vocab_, "train forward");
  threads = threads > 0 ? threads : omp_get_max_threads();
  const Threads limit(threads);
  B_ = B;
  T_ = T;
  tokens_.assign(tokens.begin(), tokens.end());
  targets_.assign(targets.begin(), targets.end());
  const Format& fs = cfg_.fwd;
  const float eps = c_.norm_eps;
  // A GEMM of an activation with a weight: the activation cast to the GEMM format first.
  const auto linear = [&](const ScaledTensor& x, const ScaledTensor& w) { return quant::matmul_nt(to(x, cfg_.act), w, fs); };

  x0_ = gather_rows(emb_, tokens);
  ScaledTensor x = to(x0_, fs);
  // Not model/block.hpp's block_forward: its tensors are float32, and here every tensor is a
  // ScaledTensor whose scale each op derives by its rule; only RoPE (on the data) is shared.
  for (Layer& L : layers_) {
    // attention block
    L.x_in = x;
    L.xn1 = quant::rms_norm(x, &L.gain1, eps, fs);
    L.q = rope(linear(L.xn1, L.lw[kQ]), static_cast<std::size_t>(c_.n_heads), false);
    L.k = rope(linear(L.xn1, L.lw[kK]), static_cast<std::size_t>(c_.n_kv_heads), false);
    L.v = linear(L.xn1, L.lw[kV]);
    L.att = attention_forward(L, threads);
    x = quant::add(x, linear(L.att, L.lw[kO]), fs);
    // feed-forward block
    L.x_mid = x;
    L.xn2 = quant::rms_norm(x, &L.gain2, eps, fs);
    L.g = linear(L.xn2, L.lw[kGate]);
    L.u = linear(L.xn2, L.lw[kUp]);
    L.sg = quant::silu(L.g);
    L.h = quant::mul(L.sg, L.u, fs);
    x = quant::add(x, linear(L.h, L.lw[kDown]), fs);
  }
  x_final_ = std::move(x);
  xn_final_ = quant::rms_norm(x_final_, &gain_final_, eps, fs);
  logits_ = linear(xn_final_, classifier_.empty() ? emb_ : cls_);
  if (targets.empty()) return std::numeric_limits<double>::quiet_NaN();

  // Cross-entropy from the logits' values (scale * data), in double, rows summed in order. Not
  // layers.hpp's crossentropy_forward/_backward: they take float32 logits and model/exp.hpp's float
  // exp, where the softmax rule computes in double from the values; sharing would change the bits.
  const std::size_t R = B * T;
  double total = 0;
  for (std::size_t r = 0; r < R; ++r) {
    const float* row = logits_.data.data() + r * vocab_;
    const double s = logits_.scale;
    double mx = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < vocab_; ++j) mx = std::max(mx, row[j] * s);
    double se = 0;
    for (std::size_t j = 0; j < vocab_; ++j) se += std::exp(row[j] * s - mx);
    total += std::log(se) + mx - row[targets[r]] * s;
  }
  return total / static_cast<double>(R);
}

void ScalifyLlama::commit_amax(std::span<const float> amax) {
  if (!amax.empty()) throw Error("scalify: " + std::to_string(amax.size()) + " amaxes to commit, but the model keeps none");
}

void ScalifyLlama::backward(int threads, std::uint64_t, std::size_t loss_rows) {
  const std::size_t R = B_ * T_;
  if (R == 0 || targets_.size() != R) throw Error("train backward: no forward pass with targets to differentiate");
  threads = threads > 0 ? threads : omp_get_max_threads();
  const Threads limit(threads);
  const Format &a = cfg_.act, &gr = cfg_.grad, &gf = cfg_.bwd;
  const float eps = c_.norm_eps;
  // dgrad dX = dY W and wgrad dW = dY^T X, their operands cast to the GEMM formats first.
  const auto dgrad = [&](const ScaledTensor& dy, const ScaledTensor& w) { return quant::matmul(to(dy, gr), w, gf); };
  const auto wgrad = [&](const ScaledTensor& dy, const ScaledTensor& x) {
    return quant::matmul(quant::transpose(to(dy, gr)), to(x, a), gf);
  };
  const auto rescale = [](const ScaledTensor& d) { return quant::dynamic_rescale(d, quant::RescaleStat::rms); };

  // dlogits = (softmax(logits) - onehot) / N, N = loss_rows (default R): the softmax rule (unit
  // scale), sub with the one-hot (unit scale: p2(sqrt 2) = 1) and mul_scalar(1/N) fused in one cast.
  {
    const double N = static_cast<double>(loss_rows > 0 ? loss_rows : R);
    const float p = quant::pow2_floor(1.0 / N);
    const double m = 1.0 / N / p;
    std::vector<float> d(R * vocab_);
    for (std::size_t r = 0; r < R; ++r) {
      const float* row = logits_.data.data() + r * vocab_;
      const double s = logits_.scale;
      double mx = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < vocab_; ++j) mx = std::max(mx, row[j] * s);
      double se = 0;
      for (std::size_t j = 0; j < vocab_; ++j) se += std::exp(row[j] * s - mx);
      for (std::size_t j = 0; j < vocab_; ++j) {
        const double pr = std::exp(row[j] * s - mx) / se;
        d[r * vocab_ + j] = static_cast<float>((pr - (static_cast<int>(j) == targets_[r] ? 1.0 : 0.0)) * m);
      }
    }
    dlogits_ = quant::scaled_from_data(std::move(d), R, vocab_, gf, p);
  }
  // Classifier: dxn = dlogits Wcls (dgrad); dWcls = dlogits^T xn (wgrad).
  const bool tied = classifier_.empty();
  const ScaledTensor dxn_final = dgrad(dlogits_, tied ? emb_ : cls_);
  accumulate(tied ? d_embedding_ : d_classifier_, wgrad(dlogits_, xn_final_));
  quant::RmsNormGrads n = quant::rms_norm_backward(x_final_, &gain_final_, dxn_final, eps);
  accumulate(d_final_norm_, n.dgain);
  ScaledTensor dx = rescale(n.dx);

  for (std::size_t li = layers_.size(); li-- > 0;) {
    Layer& L = layers_[li];
    // feed-forward block: dx flows through unchanged and into the branch.
    const ScaledTensor dh = dgrad(dx, L.lw[kDown]);
    L.dlw[kDown] = wgrad(dx, L.h);
    const ScaledTensor du = quant::mul(dh, L.sg, gf);
    const ScaledTensor dg = quant::silu_backward(L.g, quant::mul(dh, L.u, gf));
    L.dlw[kGate] = wgrad(dg, L.xn2);
    L.dlw[kUp] = wgrad(du, L.xn2);
    const ScaledTensor dxn2 = quant::add(dgrad(dg, L.lw[kGate]), dgrad(du, L.lw[kUp]), gf);
    n = quant::rms_norm_backward(L.x_mid, &L.gain2, dxn2, eps);
    accumulate(L.d_ffn_norm, n.dgain);
    dx = quant::add(dx, rescale(n.dx), gf);
    L.dx_mid = dx;
    // attention block
    const ScaledTensor datt = dgrad(dx, L.lw[kO]);
    L.dlw[kO] = wgrad(dx, L.att);
    ScaledTensor dq, dk, dv;
    attention_backward(L, datt, dq, dk, dv, threads);
    dq = rope(dq, static_cast<std::size_t>(c_.n_heads), true);
    dk = rope(dk, static_cast<std::size_t>(c_.n_kv_heads), true);
    L.dlw[kQ] = wgrad(dq, L.xn1);
    L.dlw[kK] = wgrad(dk, L.xn1);
    L.dlw[kV] = wgrad(dv, L.xn1);
    const ScaledTensor dxn1 = quant::add(quant::add(dgrad(dq, L.lw[kQ]), dgrad(dk, L.lw[kK]), gf), dgrad(dv, L.lw[kV]), gf);
    n = quant::rms_norm_backward(L.x_in, &L.gain1, dxn1, eps);
    accumulate(L.d_attn_norm, n.dgain);
    dx = quant::add(dx, rescale(n.dx), gf);
    for (int i = 0; i < kLinears; ++i) accumulate(L.dw[i], L.dlw[i]);
  }
  // Embedding: rows scattered in token order.
  dx0_ = dx;
  for (std::size_t r = 0; r < R; ++r) {
    float* d = d_embedding_.data() + static_cast<std::size_t>(tokens_[r]) * dim_;
    for (std::size_t i = 0; i < dim_; ++i) d[i] += dx.data[r * dim_ + i] * dx.scale;
  }
}

std::string ScalifyLlama::first_nonfinite_activation() const {
  if (!all_finite(x0_)) return "x";
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    const std::pair<const char*, const ScaledTensor*> acts[] = {
        {"xn1", &L.xn1}, {"q", &L.q},         {"k", &L.k},     {"v", &L.v}, {"att", &L.att}, {"x_mid", &L.x_mid},
        {"xn2", &L.xn2}, {"g", &L.g},         {"u", &L.u},     {"h", &L.h}};
    for (const auto& [name, t] : acts)
      if (!all_finite(*t)) return "layers." + std::to_string(l) + "." + name;
    for (std::size_t j = 0; j < L.p.size(); ++j)
      if (!all_finite(L.p[j])) return "layers." + std::to_string(l) + ".p";
  }
  if (!all_finite(x_final_)) return "x_final";
  if (!all_finite(xn_final_)) return "norm output";
  if (!all_finite(logits_)) return "logits";
  return "";
}

const ScaledTensor& ScalifyLlama::tensor(const std::string& name) const {
  if (name == "x") return x0_;
  if (name == "x_final") return x_final_;
  if (name == "xn_final") return xn_final_;
  if (name == "logits") return logits_;
  if (name == "dlogits") return dlogits_;
  if (name == "dx") return dx0_;
  if (name.starts_with("layers.")) {
    const std::size_t dot = name.find('.', 7);
    std::size_t l = layers_.size();
    if (dot != std::string::npos && dot > 7 && name.find_first_not_of("0123456789", 7) == dot && dot - 7 < 6)
      l = std::stoul(name.substr(7, dot - 7));
    if (l < layers_.size()) {
      const Layer& L = layers_[l];
      const std::string f = name.substr(dot + 1);
      const std::pair<const char*, const ScaledTensor*> all[] = {
          {"x_in", &L.x_in}, {"xn1", &L.xn1}, {"q", &L.q},     {"k", &L.k},          {"v", &L.v}, {"att", &L.att},
          {"x_mid", &L.x_mid}, {"xn2", &L.xn2}, {"g", &L.g}, {"u", &L.u}, {"h", &L.h}, {"dx_mid", &L.dx_mid}};
      for (const auto& [n, t] : all)
        if (f == n) return *t;
      for (int i = 0; i < kLinears; ++i)
        if (f == std::string("d") + detail::linear_tensor(static_cast<LinearKind>(i)).lowp) return L.dlw[i];
    }
  }
  throw Error("scalify: no tensor named '" + name + "'");
}

}  // namespace lowp::accuracy::train
