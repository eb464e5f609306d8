// The Llama forward pass over a window of T tokens (batched prefill), one function per block:
//   x = embedding[tokens]
//   per layer:  x += attention(rmsnorm(x))      q,k,v = linears; RoPE; causal GQA softmax(QK^T/sqrt(hd)) V; o-proj
//               x += ffn(rmsnorm(x))            down(silu(gate(x)) * up(x))
//   logits = classifier(rmsnorm(x))
// Every quantization point is a quantize_point(...) call at the place it acts; the layers are
// model/layers.hpp's and model/attention.hpp's, shared with training.
#include <algorithm>
#include <cmath>

#include "model/attention.hpp"
#include "model/layers.hpp"
#include "model/llama.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy::detail {
namespace {

using quant::QuantSpec;

}  // namespace

// The decode step's pieces (model/llama.hpp), on model/layers.hpp's layers.
void rmsnorm(const float* x, const float* w, float* out, std::size_t rows, std::size_t dim, float eps) {
  rmsnorm_forward(out, nullptr, x, w, rows, dim, eps, 1);
}

void qk_norm(const PreparedModel& pm, const PreparedLayer& L, float* q, float* k, std::size_t rows, int threads) {
  if (L.q_norm.empty()) return;
  const auto hd = static_cast<std::size_t>(pm.cfg.head_dim());
  rmsnorm_forward(q, nullptr, q, L.q_norm.data(), rows * static_cast<std::size_t>(pm.cfg.n_heads), hd,
                  pm.cfg.norm_eps, threads);
  rmsnorm_forward(k, nullptr, k, L.k_norm.data(), rows * static_cast<std::size_t>(pm.cfg.n_kv_heads), hd,
                  pm.cfg.norm_eps, threads);
}

void rope(const PreparedModel& pm, float* x, std::size_t rows, std::size_t heads, std::size_t pos0) {
  const std::size_t hd = static_cast<std::size_t>(pm.cfg.head_dim()), half = hd / 2;
  rope_forward(x, pm.rope_cos.data() + pos0 * half, pm.rope_sin.data() + pos0 * half, 1, rows, heads, hd);
}

namespace {

class Window : ForwardOps {
 public:
  Window(const PreparedModel& pm, std::size_t T, ErrorLog& log, int threads)
      : ForwardOps(pm, log, threads), r_(pm.recipe), c_(pm.cfg), T_(T),
        dim_(static_cast<std::size_t>(c_.dim)), kv_(static_cast<std::size_t>(c_.kv_dim())),
        hd_(static_cast<std::size_t>(c_.head_dim())), qd_(static_cast<std::size_t>(c_.q_dim())),
        hidden_(static_cast<std::size_t>(c_.hidden_dim)) {}

  // Logits of rows [first, T) only: rows before `first` are not scored.
  void run(std::span<const int> tokens, float* logits, std::size_t first, const ResidualTap& tap) {
    x_.resize(T_ * dim_);
    embedding_forward(x_.data(), pm_.embedding_view, tokens);
    finite(x_.data(), dim_, -1, "token_embedding rows");
    run_from(0, logits, first, tap);
  }

  // Layers [from, n_layers) and the head on x_, the residual stream entering layer `from`.
  void run_from(std::size_t from, float* logits, std::size_t first, const ResidualTap& tap) {
    for (std::size_t l = from; l < pm_.layers.size(); ++l) {
      if (tap) tap(l, x_.data());
      attention_block(static_cast<int>(l));
      ffn_block(static_cast<int>(l));
    }
    if (tap) tap(pm_.layers.size(), x_.data());
    xb_.resize(T_ * dim_);
    rmsnorm_forward(xb_.data(), nullptr, x_.data(), pm_.final_norm.data(), T_, dim_, c_.norm_eps, threads_);
    finite(xb_.data(), dim_, -1, "the final RMSNorm output");
    const std::size_t vocab = static_cast<std::size_t>(c_.vocab_size);
    linear(pm_.classifier, xb_.data() + first * dim_, logits + first * vocab, -1, T_ - first);
  }

  void resume(std::span<const float> x) { x_.assign(x.begin(), x.end()); }

 private:
  void attention_block(int l) {
    const PreparedLayer& L = pm_.layers[static_cast<std::size_t>(l)];
    xb_.resize(T_ * dim_);
    rmsnorm_forward(xb_.data(), nullptr, x_.data(), L.attn_norm.data(), T_, dim_, c_.norm_eps, threads_);
    finite(xb_.data(), dim_, l, "the attn_norm output");
    qkv_.resize(T_ * (qd_ + 2 * kv_));
    linear(L.qkv, xb_.data(), qkv_.data(), l);
    bias_forward(qkv_.data(), L.qkv_bias.data(), T_, L.qkv_bias.size());
    split_qkv();
    qk_norm(pm_, L, q_.data(), k_.data(), T_, threads_);
    rope_forward(q_.data(), pm_.rope_cos.data(), pm_.rope_sin.data(), 1, T_, static_cast<std::size_t>(c_.n_heads), hd_);
    rope_forward(k_.data(), pm_.rope_cos.data(), pm_.rope_sin.data(), 1, T_, static_cast<std::size_t>(c_.n_kv_heads), hd_);
    const bool rotate = pm_.head_rotation.kind != hadamard::RotationKind::none;
    if (rotate) {  // HadaCore / FA3: Q R (K R)^T = Q K^T
      pm_.head_rotation.apply(q_.data(), T_ * static_cast<std::size_t>(c_.n_heads), hd_);
      pm_.head_rotation.apply(k_.data(), T_ * static_cast<std::size_t>(c_.n_kv_heads), hd_);
      if (r_.rotate_v) pm_.head_rotation.apply(v_.data(), T_ * static_cast<std::size_t>(c_.n_kv_heads), hd_);
    }
    quantize_point(L.kv, k_.data(), T_, kv_, l, "kv.k");  // as written to the KV cache
    quantize_point(L.kv, v_.data(), T_, kv_, l, "kv.v");
    quantize_point(L.q, q_.data(), T_, qd_, l, "q");
    quantize_point(L.k, k_.data(), T_, kv_, l, "k");
    quantize_point(L.v, v_.data(), T_, kv_, l, "v");
    attend(l);
    finite(att_.data(), qd_, l, "the attention output (softmax(QK^T) V)");
    if (rotate && r_.rotate_v)  // P (V R) R^T = P V
      pm_.head_rotation.apply_inverse(att_.data(), T_ * static_cast<std::size_t>(c_.n_heads), hd_);
    out_.resize(T_ * dim_);
    linear(L.wo, att_.data(), out_.data(), l);
    bias_forward(out_.data(), L.wo_bias.data(), T_, L.wo_bias.size());
    residual_forward(x_.data(), out_.data(), T_ * dim_);
    finite(x_.data(), dim_, l, "the residual stream after attention");
  }

  void ffn_block(int l) {
    const PreparedLayer& L = pm_.layers[static_cast<std::size_t>(l)];
    rmsnorm_forward(xb_.data(), nullptr, x_.data(), L.ffn_norm.data(), T_, dim_, c_.norm_eps, threads_);
    finite(xb_.data(), dim_, l, "the ffn_norm output");
    gu_.resize(T_ * 2 * hidden_);
    linear(L.gate_up, xb_.data(), gu_.data(), l);
    hb_.resize(T_ * hidden_);
    swiglu_forward(hb_.data(), gu_.data(), gu_.data() + hidden_, T_, hidden_, 2 * hidden_);
    finite(hb_.data(), hidden_, l, "silu(gate) * up");
    if (pm_.down_rotation.kind != hadamard::RotationKind::none)  // QuaRot's online Hadamard
      pm_.down_rotation.apply(hb_.data(), T_, hidden_);
    out_.resize(T_ * dim_);
    linear(L.down, hb_.data(), out_.data(), l);
    residual_forward(x_.data(), out_.data(), T_ * dim_);
    finite(x_.data(), dim_, l, "the residual stream after the FFN");
  }

  // Causal grouped-query attention (model/attention.cpp) with this layer's attn.p quantizing each
  // head's P; the heads' errors are logged in head order, as one T x T tensor each.
  void attend(int l) {
    const auto heads = static_cast<std::size_t>(c_.n_heads);
    att_.resize(T_ * qd_);
    const std::optional<QuantSpec>& p_spec = pm_.layers[static_cast<std::size_t>(l)].p;  // this layer's attn.p
    AttentionP pq;
    std::vector<ErrorLog> head_logs;
    if (p_spec) {
      check_shape(*p_spec, T_, T_, "p", l);
      head_logs.resize(heads);
      pq.fa3 = r_.p_form == AttnPForm::fa3;  // FlashAttention-3's P: the unnormalized exponentials
      pq.quantize = [&](std::size_t h, float* p) {
        const std::vector<float> before(p, p + T_ * T_);
        quant::fake_quant(*p_spec, p, T_, T_);
        head_logs[h].add(l, "p", before.data(), p, T_ * T_);
      };
    }
    const AttentionShape shape{1, T_, heads, static_cast<std::size_t>(c_.n_kv_heads), hd_};
    attention_forward(shape, q_.data(), k_.data(), v_.data(), att_.data(), nullptr, threads_, pq);
    for (const ErrorLog& h : head_logs)
      for (const TensorError& e : h.entries()) log_.add(e);
  }

  void split_qkv() {
    const std::size_t w = qd_ + 2 * kv_;
    q_.resize(T_ * qd_);
    k_.resize(T_ * kv_);
    v_.resize(T_ * kv_);
    for (std::size_t t = 0; t < T_; ++t) {
      const float* row = qkv_.data() + t * w;
      std::copy_n(row, qd_, q_.data() + t * qd_);
      std::copy_n(row + qd_, kv_, k_.data() + t * kv_);
      std::copy_n(row + qd_ + kv_, kv_, v_.data() + t * kv_);
    }
  }

  using ForwardOps::finite;
  using ForwardOps::linear;
  void linear(const LinearGroup& group, const float* in, float* out, int l) { linear(group, in, out, l, T_); }

  void finite(const float* x, std::size_t cols, int l, const std::string& tensor) const {
    ForwardOps::finite(x, cols, l, tensor, T_);
  }

  const Recipe& r_;
  const LlamaConfig& c_;
  const std::size_t T_;
  const std::size_t dim_, kv_, hd_, qd_, hidden_;
  std::vector<float> x_, xb_, qkv_, q_, k_, v_, att_, out_, gu_, hb_;
};

}  // namespace

// y = x W^T for each linear of the group, outputs side by side (rows x sum n).
void ForwardOps::linear(const LinearGroup& group, const float* in, float* out, int l, std::size_t rows) {
  if (pm_.capture) pm_.capture(l, group, in, rows);
  std::size_t total = 0;
  for (const auto& L : group) total += L.n;
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
    } else {
      quant::gemm_f32(x, L.weight, y, rows, false, threads_);
    }
    if (pm_.check_finite) {
      std::string name = "the output of";
      for (std::size_t i = 0; i < L.act_points.size(); ++i)
        name.append(i ? "|" : " ").append(std::string_view(L.act_points[i]).substr(2));
      finite(y, L.n, l, name, rows);
    }
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
  before_.assign(x, x + rows * cols);
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
  for (const auto& p : points) log_.add(l, p, before_.data(), x, rows * cols);
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

}  // namespace lowp::accuracy::detail
