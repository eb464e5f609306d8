// The Llama's training forward and backward passes, block by block, in the order the forward
// runs them. Each layer's forward is the evaluator's block (model/block.hpp) with this file's
// StepOps (the QuantLinears), keeping what the backward reads; the backward is written here from
// the layers' *_backward (model/layers.hpp and model/attention.hpp, llm.c style). Names as in the
// papers:
//   x = E[tokens]
//   per layer:  xn1 = rmsnorm(x) ; q,k,v = xn1 Wq^T + bq, Wk^T + bk, Wv^T + bv ; RoPE(q, k)
//               S = q k^T / sqrt(hd) (causal) ; P = softmax(S) ; att = P v ; x += att Wo^T + bo
//               xn2 = rmsnorm(x) ; g = xn2 Wgate^T ; u = xn2 Wup^T ; h = silu(g) u ; x += h Wdown^T
//   logits = rmsnorm(x) Wcls^T ; loss = mean cross-entropy
// (the biases only when the model has them).
#include "train/llama_train.hpp"

#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <cmath>
#include <cstring>
#include <limits>

#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/gemm.hpp"
#include "model/attention.hpp"
#include "model/layers.hpp"

namespace lowp::accuracy::train {
namespace {

enum Lin { kQ = 0, kK, kV, kO, kGate, kUp, kDown, kLinears };

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
  const auto dim = static_cast<std::size_t>(c.dim), vocab = static_cast<std::size_t>(c.vocab_size);
  const float s = 0.02f, so = 0.02f / std::sqrt(2.0f * static_cast<float>(c.n_layers));
  m.token_embedding = fill(vocab * dim, s);
  m.layers.resize(static_cast<std::size_t>(c.n_layers));
  for (auto& l : m.layers) {
    l.attn_norm.assign(dim, 1.0f);
    l.ffn_norm.assign(dim, 1.0f);
    for (int k = 0; k < kLinears; ++k) {  // in LinearKind order: the seeds follow it
      const detail::TensorSpec& t = detail::linear_tensor(static_cast<LinearKind>(k));
      // The projections back into the residual stream (wo, down) take the scaled deviation.
      l.*t.layer_member = fill(detail::tensor_size(c, t), t.rows == detail::Extent::dim ? so : s);
    }
  }
  m.final_norm.assign(dim, 1.0f);
  if (!tied) m.classifier = fill(vocab * dim, s);
  return m;
}

template <class L>
auto TrainLlama::tensors(L& layer, [[maybe_unused]] bool grad) {
  constexpr bool ro = std::is_const_v<L>;
  using V = std::conditional_t<ro, const std::vector<float>, std::vector<float>>;
  LayerTensors<V> t{};
  for (std::size_t i = 0; i < t.size(); ++i)
    if (const auto kind = detail::kLayerTensors[i].linear) {
      auto& q = layer.lin[static_cast<std::size_t>(*kind)];
      if constexpr (ro) t[i] = &q.weight();
      else t[i] = grad ? &q.weight_grad() : &q.weight();  // the non-const weight() drops the cached copy
    }
  const auto set = [&](Weight LayerWeights::*member, V& value, V& gradient) {
    t[detail::layer_row(member)] = !ro && grad ? &gradient : &value;
  };
  set(&LayerWeights::attn_norm, layer.attn_norm, layer.d_attn_norm);
  set(&LayerWeights::ffn_norm, layer.ffn_norm, layer.d_ffn_norm);
  Weight LayerWeights::*const bias[4] = {&LayerWeights::bq, &LayerWeights::bk, &LayerWeights::bv, &LayerWeights::bo};
  for (int i = 0; i < 4; ++i) set(bias[i], layer.bias[i], layer.dbias[i]);
  set(&LayerWeights::q_norm, layer.qn, layer.dqn);
  set(&LayerWeights::k_norm, layer.kn, layer.dkn);
  return t;
}

TrainLlama::TrainLlama(const LlamaModel& m, const quant::LinearRecipe& linear)
    : TrainLlama(m, [&](int, std::size_t) { return linear; }) {}

TrainLlama::TrainLlama(const LlamaModel& m, const LinearFor& linear_for, const quant::LinearRecipe* classifier)
    : c_(m.config),
      dim_(static_cast<std::size_t>(c_.dim)),
      kv_(static_cast<std::size_t>(c_.kv_dim())),
      hd_(static_cast<std::size_t>(c_.head_dim())),
      qd_(static_cast<std::size_t>(c_.q_dim())),
      hidden_(static_cast<std::size_t>(c_.hidden_dim)),
      vocab_(static_cast<std::size_t>(c_.vocab_size)) {
  validate(m);
  embedding_ = m.token_embedding;
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    Layer L;
    for (int i = 0; i < kLinears; ++i) {
      const detail::TensorSpec& t = detail::linear_tensor(static_cast<LinearKind>(i));
      L.lin.emplace_back(linear_for(i, l), detail::extent(c_, t.cols), detail::extent(c_, t.rows), false);
      L.lin.back().borrow_input(true);  // its input is one of L.acts, kept unchanged until the backward
    }
    const auto dst = tensors(L, false);
    for (std::size_t i = 0; i < dst.size(); ++i)
      if (dst[i]) *dst[i] = m.layers[l].*detail::kLayerTensors[i].layer_member;
    L.acts.keep = true;
    layers_.push_back(std::move(L));
  }
  final_norm_ = m.final_norm;
  classifier_ = m.classifier;
  if (classifier && classifier->name != "fp32") {
    cls_ = std::make_unique<quant::QuantLinear>(*classifier, dim_, vocab_, false);
    cls_->borrow_input(true);  // xn_final_, kept until the backward
    weights_changed();
  }
  zero_grad();
  detail::rope_tables(c_, static_cast<std::size_t>(c_.seq_len), rope_cos_, rope_sin_);
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
    for (int i = 0; i < 4; ++i) L.dbias[i].assign(L.bias[i].size(), 0.0f);
    L.dqn.assign(L.qn.size(), 0.0f);
    L.dkn.assign(L.kn.size(), 0.0f);
  }
  d_final_norm_.assign(dim_, 0.0f);
  d_classifier_.assign(classifier_.size(), 0.0f);
}

std::vector<TrainLlama::Param> TrainLlama::params() {
  std::vector<LayerParams> layers;
  for (Layer& L : layers_) layers.push_back({tensors(L, false), tensors(L, true)});
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
      out.push_back({static_cast<int>(l), detail::linear_tensor(static_cast<LinearKind>(i)).lowp,
                     layers_[l].lin[static_cast<std::size_t>(i)].take_stats()});
  if (cls_) out.push_back({-1, "classifier", cls_->take_stats()});
  return out;
}

LlamaModel TrainLlama::to_model() const {
  std::vector<LayerTensors<const std::vector<float>>> layers;
  for (const Layer& L : layers_) layers.push_back(tensors(L, false));
  return trained_model(c_, embedding_, layers, final_norm_, classifier_);
}

// ---------------------------------------------------------------- the block's ops

// Layer l's QuantLinears (each seeded from the step's seed, observed), its gains and biases. No
// quantization points, rotations or checks: the linears quantize their own operands.
class TrainLlama::StepOps : public detail::BlockOps {
 public:
  StepOps(TrainLlama& m, int threads, std::uint64_t seed) : m_(m), threads_(threads), seed_(seed) {}
  const LlamaConfig& config() const override { return m_.c_; }
  int threads() const override { return threads_; }
  Weights weights(int l) const override {
    const Layer& L = m_.layers_[static_cast<std::size_t>(l)];
    return {L.attn_norm.data(), L.ffn_norm.data(), L.bias[0], L.bias[1], L.bias[2], L.bias[3],
            L.qn.empty() ? nullptr : L.qn.data(), L.kn.empty() ? nullptr : L.kn.data()};
  }
  const float* rope_cos() const override { return m_.rope_cos_.data(); }
  const float* rope_sin() const override { return m_.rope_sin_.data(); }
  void qkv(int l, const float* xn, std::size_t, float* q, float* k, float* v) override {
    lin(l, kQ, xn, q);
    lin(l, kK, xn, k);
    lin(l, kV, xn, v);
  }
  void wo(int l, const float* att, std::size_t, float* out) override { lin(l, kO, att, out); }
  GateUp gate_up(int l, const float* xn, std::size_t rows) override {
    Layer& L = m_.layers_[static_cast<std::size_t>(l)];
    L.g.resize(rows * m_.hidden_);
    L.u.resize(rows * m_.hidden_);
    lin(l, kGate, xn, L.g.data());
    lin(l, kUp, xn, L.u.data());
    return {L.g.data(), L.u.data(), m_.hidden_};
  }
  void down(int l, const float* h, std::size_t, float* out) override { lin(l, kDown, h, out); }

 private:
  TrainLlama& m_;
  const int threads_;
  const std::uint64_t seed_;
  void lin(int l, int k, const float* x, float* y) {
    const auto li = static_cast<std::size_t>(l);
    m_.lin_forward(li, k, x, y, mix(mix(seed_, li + 1), static_cast<std::uint64_t>(k)));
  }
};

// ---------------------------------------------------------------- whole model

double TrainLlama::forward(std::span<const int> tokens, std::span<const int> targets, std::size_t B, std::size_t T,
                           int threads, std::uint64_t seed) {
  using namespace detail;
  check_batch(tokens, targets, B, T, static_cast<std::size_t>(c_.seq_len), vocab_, "train forward");
  threads = threads > 0 ? threads : omp_get_max_threads();
  B_ = B;
  T_ = T;
  tokens_.assign(tokens.begin(), tokens.end());
  targets_.assign(targets.begin(), targets.end());
  const std::size_t R = B * T;
  std::vector<float>& x = x_final_;  // the residual stream, left as the final one
  x.resize(R * dim_);
  embedding_forward(x.data(), quant::StoredMatrix{quant::StoredType::f32, embedding_.data(), vocab_, dim_}, tokens);
  StepOps ops(*this, threads, seed);
  for (std::size_t l = 0; l < layers_.size(); ++l)
    block_forward(ops, static_cast<int>(l), x.data(), BlockRows{B, T, 0, nullptr}, layers_[l].acts);
  inv_final_.resize(R);
  xn_final_.resize(R * dim_);
  rmsnorm_forward(xn_final_.data(), inv_final_.data(), x_final_.data(), final_norm_.data(), R, dim_, c_.norm_eps,
                  threads);
  // classifier
  logits_.resize(R * vocab_);
  const std::vector<float>& wcls = classifier_.empty() ? embedding_ : classifier_;
  if (cls_)
    lin_forward(0, kLinears, xn_final_.data(), logits_.data(), mix(seed, 0xc1a55));
  else
    quant::gemm_f32(xn_final_.data(), wcls.data(), logits_.data(), R, vocab_, dim_, false, threads);
  if (targets.empty()) return std::numeric_limits<double>::quiet_NaN();
  // Cross-entropy: the row sums are kept for the backward's softmax.
  ce_sum_.resize(R);
  return crossentropy_forward(logits_.data(), targets_.data(), R, vocab_, ce_sum_.data()) / static_cast<double>(R);
}

void TrainLlama::backward(int threads, std::uint64_t seed, std::size_t loss_rows) {
  using namespace detail;
  const std::size_t R = B_ * T_;
  if (R == 0 || targets_.size() != R) throw Error("train backward: no forward pass with targets to differentiate");
  threads = threads > 0 ? threads : omp_get_max_threads();
  const std::size_t heads = static_cast<std::size_t>(c_.n_heads), kvh = static_cast<std::size_t>(c_.n_kv_heads);
  const float *cos = rope_cos_.data(), *sin = rope_sin_.data();
  // Cross-entropy: dlogits = (softmax - onehot) / rows, in place.
  std::vector<float>& dlogits = logits_;
  crossentropy_backward(dlogits.data(), ce_sum_.data(), targets_.data(), R, vocab_,
                        static_cast<double>(loss_rows > 0 ? loss_rows : R), threads);
  // Classifier: dxn = dlogits Wcls; dWcls += dlogits^T xn.
  std::vector<float>& wcls = classifier_.empty() ? embedding_ : classifier_;
  std::vector<float>& dwcls = classifier_.empty() ? d_embedding_ : d_classifier_;
  std::vector<float>&dx = dx_, &dxn = dxn_;
  dx.assign(R * dim_, 0.0f);
  dxn.resize(R * dim_);
  if (cls_) {
    std::vector<float>& g = cls_->weight_grad();
    std::fill(g.begin(), g.end(), 0.0f);
    lin_backward(0, kLinears, xn_final_.data(), dlogits.data(), dxn.data(), mix(seed, 0xc1a55));
    for (std::size_t i = 0; i < g.size(); ++i) dwcls[i] += g[i];
  } else {
    using quant::Layout;
    quant::gemm_f32(dlogits.data(), Layout::as_is, wcls.data(), Layout::transposed, dxn.data(), R, dim_, vocab_, false,
                    threads);
    quant::gemm_f32(dlogits.data(), Layout::transposed, xn_final_.data(), Layout::transposed, dwcls.data(), vocab_,
                    dim_, R, true, threads);
  }
  rmsnorm_backward(dx.data(), d_final_norm_.data(), dxn.data(), x_final_.data(), final_norm_.data(), inv_final_.data(),
                   R, dim_, threads);

  std::vector<float>&dtmp = dtmp_, &dh = dh_, &dg = dg_, &du = du_, &datt = datt_, &dq = dq_, &dk = dk_, &dv = dv_;
  for (auto [v, n] : {std::pair{&dtmp, dim_}, {&dh, hidden_}, {&dg, hidden_}, {&du, hidden_}, {&datt, qd_}, {&dq, qd_},
                      {&dk, kv_}, {&dv, kv_}})
    v->resize(R * n);  // every one written before it is read
  for (std::size_t li = layers_.size(); li-- > 0;) {
    Layer& L = layers_[li];
    const BlockActs& A = L.acts;  // what its forward kept
    const std::uint64_t ls = mix(mix(seed, li + 1), 0xbac);
    // feed-forward block: dx flows through the residual unchanged and into the branch.
    lin_backward(li, kDown, A.h.data(), dx.data(), dh.data(), mix(ls, kDown));
    swiglu_backward(dg.data(), du.data(), dh.data(), L.g.data(), L.u.data(), R * hidden_, threads);
    lin_backward(li, kGate, A.xn2.data(), dg.data(), dxn.data(), mix(ls, kGate));
    lin_backward(li, kUp, A.xn2.data(), du.data(), dtmp.data(), mix(ls, kUp));
    residual_forward(dxn.data(), dtmp.data(), R * dim_);
    rmsnorm_backward(dx.data(), L.d_ffn_norm.data(), dxn.data(), A.x_mid.data(), L.ffn_norm.data(), A.inv2.data(), R,
                     dim_, threads);
    // attention block
    bias_backward(L.dbias[3].data(), dx.data(), R, L.dbias[3].size());
    lin_backward(li, kO, A.att.data(), dx.data(), datt.data(), mix(ls, kO));
    attention_backward(attention_shape(), A.q.data(), A.k.data(), A.v.data(), A.p.data(), datt.data(), dq.data(),
                       dk.data(), dv.data(), threads);
    rope_backward(dq.data(), cos, sin, B_, T_, heads, hd_);
    rope_backward(dk.data(), cos, sin, B_, T_, kvh, hd_);
    if (!L.qn.empty()) {  // QK-norm: back through each head's RMSNorm to the projections' outputs
      dqk_.assign(R * qd_, 0.0f);
      rmsnorm_backward(dqk_.data(), L.dqn.data(), dq.data(), A.q_pre.data(), L.qn.data(), A.invq.data(), R * heads, hd_,
                       threads);
      dq.swap(dqk_);
      dqk_.assign(R * kv_, 0.0f);
      rmsnorm_backward(dqk_.data(), L.dkn.data(), dk.data(), A.k_pre.data(), L.kn.data(), A.invk.data(), R * kvh, hd_,
                       threads);
      dk.swap(dqk_);
    }
    bias_backward(L.dbias[0].data(), dq.data(), R, L.dbias[0].size());
    bias_backward(L.dbias[1].data(), dk.data(), R, L.dbias[1].size());
    bias_backward(L.dbias[2].data(), dv.data(), R, L.dbias[2].size());
    lin_backward(li, kQ, A.xn1.data(), dq.data(), dxn.data(), mix(ls, kQ));
    lin_backward(li, kK, A.xn1.data(), dk.data(), dtmp.data(), mix(ls, kK));
    residual_forward(dxn.data(), dtmp.data(), R * dim_);
    lin_backward(li, kV, A.xn1.data(), dv.data(), dtmp.data(), mix(ls, kV));
    residual_forward(dxn.data(), dtmp.data(), R * dim_);
    rmsnorm_backward(dx.data(), L.d_attn_norm.data(), dxn.data(), A.x_in.data(), L.attn_norm.data(), A.inv1.data(), R,
                     dim_, threads);
  }
  embedding_backward(d_embedding_.data(), dx.data(), tokens_, dim_);
}

bool TrainLlama::uses_seed() const {
  for (const Layer& L : layers_)
    for (const quant::QuantLinear& q : L.lin)
      if (quant::uses_seed(q.recipe())) return true;
  return cls_ && quant::uses_seed(cls_->recipe());
}

void TrainLlama::lin_forward(std::size_t l, int k, const float* x, float* y, std::uint64_t seed) {
  quant::QuantLinear& q = k == kLinears ? *cls_ : layers_[l].lin[static_cast<std::size_t>(k)];
  const std::size_t R = B_ * T_;
  q.forward(x, R, y, seed);
  if (observer_) observe(l, k, q, x, nullptr, y, nullptr);
}

void TrainLlama::lin_backward(std::size_t l, int k, const float* x, const float* dy, float* dx, std::uint64_t seed) {
  quant::QuantLinear& q = k == kLinears ? *cls_ : layers_[l].lin[static_cast<std::size_t>(k)];
  q.backward(dy, dx, seed);
  if (observer_) observe(l, k, q, x, dy, dx, q.weight_grad().data());
}

void TrainLlama::observe(std::size_t l, int k, const quant::QuantLinear& q, const float* x, const float* dy, const float* out,
                         const float* dw) const {
  const std::size_t K = detail::extent(c_, detail::linear_tensor(static_cast<LinearKind>(k)).cols);
  observer_({k == kLinears ? -1 : static_cast<int>(l), k, &q, x, dy, out, dw, B_ * T_, K, q.weight().size() / K});
}

std::string TrainLlama::first_nonfinite_activation() const {
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    const std::pair<const char*, const std::vector<float>*> acts[] = {
        {"x", &L.acts.x_in},     {"xn1", &L.acts.xn1}, {"q", &L.acts.q}, {"k", &L.acts.k}, {"v", &L.acts.v},
        {"p", &L.acts.p},        {"att", &L.acts.att}, {"x_mid", &L.acts.x_mid}, {"xn2", &L.acts.xn2},
        {"g", &L.g},             {"u", &L.u},          {"h", &L.acts.h}};
    for (const auto& [name, v] : acts)
      if (!all_finite(*v)) return "layers." + std::to_string(l) + "." + name;
  }
  if (!all_finite(x_final_)) return "x_final";
  if (!all_finite(xn_final_)) return "norm output";
  if (!all_finite(logits_)) return "logits";
  return "";
}

}  // namespace lowp::accuracy::train
