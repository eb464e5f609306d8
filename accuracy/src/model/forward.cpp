// The Llama forward pass over a window of T tokens (batched prefill), one function per block:
//   x = embedding[tokens]
//   per layer:  x += attention(rmsnorm(x))      q,k,v = linears; RoPE; causal GQA softmax(QK^T/sqrt(hd)) V; o-proj
//               x += ffn(rmsnorm(x))            down(silu(gate(x)) * up(x))
//   logits = classifier(rmsnorm(x))
// Every quantization point is a quantize_point(...) call at the place it acts.
#include <algorithm>
#include <cmath>

#include "model/llama.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy::detail {
namespace {

using quant::QuantSpec;

}  // namespace

void rmsnorm(const float* x, const float* w, float* out, std::size_t rows, std::size_t dim, float eps) {
  for (std::size_t t = 0; t < rows; ++t) {
    const float* xr = x + t * dim;
    double ss = 0;
    for (std::size_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const auto inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
    for (std::size_t i = 0; i < dim; ++i) out[t * dim + i] = w[i] * (xr[i] * inv);
  }
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

void rope(const PreparedModel& pm, float* x, std::size_t rows, std::size_t heads, std::size_t pos0) {
  const std::size_t hd = static_cast<std::size_t>(pm.cfg.head_dim()), half = hd / 2;
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t h = 0; h < heads; ++h) {
      float* v = x + t * heads * hd + h * hd;
      const float* cs = pm.rope_cos.data() + (pos0 + t) * half;
      const float* sn = pm.rope_sin.data() + (pos0 + t) * half;
      for (std::size_t i = 0; i < half; ++i) {
        const float c = cs[i], s = sn[i];
        const float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = a * c - b * s;
        v[2 * i + 1] = a * s + b * c;
      }
    }
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
  void run(std::span<const int> tokens, float* logits, std::size_t first) {
    x_.resize(T_ * dim_);
    for (std::size_t t = 0; t < T_; ++t)
      quant::widen_rows(pm_.embedding_view, static_cast<std::size_t>(tokens[t]), 1, x_.data() + t * dim_);
    finite(x_.data(), dim_, -1, "token_embedding rows");
    for (std::size_t l = 0; l < pm_.layers.size(); ++l) {
      attention_block(static_cast<int>(l));
      ffn_block(static_cast<int>(l));
    }
    xb_.resize(T_ * dim_);
    rmsnorm(x_.data(), pm_.final_norm.data(), xb_.data(), T_, dim_, c_.norm_eps);
    finite(xb_.data(), dim_, -1, "the final RMSNorm output");
    const std::size_t vocab = static_cast<std::size_t>(c_.vocab_size);
    linear(pm_.classifier, xb_.data() + first * dim_, logits + first * vocab, -1, T_ - first);
  }

 private:
  void attention_block(int l) {
    const PreparedLayer& L = pm_.layers[static_cast<std::size_t>(l)];
    xb_.resize(T_ * dim_);
    rmsnorm(x_.data(), L.attn_norm.data(), xb_.data(), T_, dim_, c_.norm_eps);
    finite(xb_.data(), dim_, l, "the attn_norm output");
    qkv_.resize(T_ * (qd_ + 2 * kv_));
    linear(L.qkv, xb_.data(), qkv_.data(), l);
    add_bias(qkv_.data(), L.qkv_bias);
    split_qkv();
    rope(q_.data(), static_cast<std::size_t>(c_.n_heads));
    rope(k_.data(), static_cast<std::size_t>(c_.n_kv_heads));
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
    finite(att_.data(), dim_, l, "the attention output (softmax(QK^T) V)");
    if (rotate && r_.rotate_v)  // P (V R) R^T = P V
      pm_.head_rotation.apply_inverse(att_.data(), T_ * static_cast<std::size_t>(c_.n_heads), hd_);
    out_.resize(T_ * dim_);
    linear(L.wo, att_.data(), out_.data(), l);
    add_bias(out_.data(), L.wo_bias);
    for (std::size_t i = 0; i < T_ * dim_; ++i) x_[i] += out_[i];
    finite(x_.data(), dim_, l, "the residual stream after attention");
  }

  void ffn_block(int l) {
    const PreparedLayer& L = pm_.layers[static_cast<std::size_t>(l)];
    rmsnorm(x_.data(), L.ffn_norm.data(), xb_.data(), T_, dim_, c_.norm_eps);
    finite(xb_.data(), dim_, l, "the ffn_norm output");
    gu_.resize(T_ * 2 * hidden_);
    linear(L.gate_up, xb_.data(), gu_.data(), l);
    hb_.resize(T_ * hidden_);
    for (std::size_t t = 0; t < T_; ++t)
      for (std::size_t i = 0; i < hidden_; ++i)
        hb_[t * hidden_ + i] = silu(gu_[t * 2 * hidden_ + i]) * gu_[t * 2 * hidden_ + hidden_ + i];
    finite(hb_.data(), hidden_, l, "silu(gate) * up");
    if (pm_.down_rotation.kind != hadamard::RotationKind::none)  // QuaRot's online Hadamard
      pm_.down_rotation.apply(hb_.data(), T_, hidden_);
    out_.resize(T_ * dim_);
    linear(L.down, hb_.data(), out_.data(), l);
    for (std::size_t i = 0; i < T_ * dim_; ++i) x_[i] += out_[i];
    finite(x_.data(), dim_, l, "the residual stream after the FFN");
  }

  // Causal grouped-query attention, head by head: S = Q_h K_g^T / sqrt(hd), P = softmax over
  // positions <= t, att_h = P V_g. The GEMMs thread inside gemm_f32 (OpenMP).
  void attend(int l) {
    const auto heads = static_cast<std::size_t>(c_.n_heads);
    const std::size_t group = heads / static_cast<std::size_t>(c_.n_kv_heads);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd_));
    att_.resize(T_ * qd_);
    qh_.resize(T_ * hd_);
    kh_.resize(T_ * hd_);
    vt_.resize(hd_ * T_);
    s_.resize(T_ * T_);
    oh_.resize(T_ * hd_);
    // FlashAttention-3's P (attn.p_form = fa3): the unnormalized exponentials are quantized.
    const std::optional<QuantSpec>& p_spec = pm_.layers[static_cast<std::size_t>(l)].p;  // this layer's attn.p
    const bool fa3 = p_spec && r_.p_form == AttnPForm::fa3;
    if (fa3) row_sum_.resize(T_);
    for (std::size_t h = 0; h < heads; ++h) {
      const std::size_t g = h / group;
      for (std::size_t t = 0; t < T_; ++t)
        for (std::size_t d = 0; d < hd_; ++d) {
          qh_[t * hd_ + d] = q_[t * qd_ + h * hd_ + d];
          kh_[t * hd_ + d] = k_[t * kv_ + g * hd_ + d];
          vt_[d * T_ + t] = v_[t * kv_ + g * hd_ + d];
        }
      quant::gemm_f32(qh_.data(), kh_.data(), s_.data(), T_, T_, hd_, false, threads_);
      for (std::size_t i = 0; i < T_; ++i) {
        float* row = s_.data() + i * T_;
        float mx = -INFINITY;
        for (std::size_t j = 0; j <= i; ++j) mx = std::max(mx, row[j] *= scale);
        float sum = 0;
        for (std::size_t j = 0; j <= i; ++j) sum += row[j] = std::exp(row[j] - mx);
        if (fa3) {  // 2^8 exp(S - rowmax): exact power-of-two scaling, divided out below
          for (std::size_t j = 0; j <= i; ++j) row[j] *= kFa3POffset;
          row_sum_[i] = sum * kFa3POffset;
        } else {
          for (std::size_t j = 0; j <= i; ++j) row[j] /= sum;
        }
        std::fill(row + i + 1, row + T_, 0.0f);
      }
      quantize_point(p_spec, s_.data(), T_, T_, l, "p");  // each head's P: one T x T tensor
      quant::gemm_f32(s_.data(), vt_.data(), oh_.data(), T_, hd_, T_, false, threads_);
      if (fa3)
        for (std::size_t t = 0; t < T_; ++t) {  // as FA3's finalize: O times 1 / row sum
          const float inv = 1.0f / row_sum_[t];
          for (std::size_t d = 0; d < hd_; ++d) oh_[t * hd_ + d] *= inv;
        }
      for (std::size_t t = 0; t < T_; ++t) std::copy_n(oh_.data() + t * hd_, hd_, att_.data() + t * qd_ + h * hd_);
    }
  }

  void rope(float* x, std::size_t heads) { detail::rope(pm_, x, T_, heads, 0); }

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

  // Each of the T_ rows of y (width bias.size()) += bias.
  void add_bias(float* y, const std::vector<float>& bias) const {
    const std::size_t n = bias.size();
    for (std::size_t t = 0; t < T_ && n; ++t)
      for (std::size_t i = 0; i < n; ++i) y[t * n + i] += bias[i];
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
  std::vector<float> qh_, kh_, vt_, s_, oh_;  // one head's attention
  std::vector<float> row_sum_;                 // attn.p_form = fa3: each row's exp sum x 2^8
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
  quant::fake_quant(*spec, x, rows, cols);
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
                    int threads, std::size_t first_logit) {
  Window(pm, tokens.size(), log, threads).run(tokens, logits, first_logit);
}

}  // namespace lowp::accuracy::detail
