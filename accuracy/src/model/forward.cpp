// The Llama forward pass over a window of T tokens (batched prefill):
//   x = embedding[tokens]; per layer block_forward (model/block.hpp) over a KV cache of T rows;
//   logits = classifier(rmsnorm(x))
// and ForwardOps, the recipe's linears and quantization points that the block calls.
#include <algorithm>
#include <cmath>

#include "model/block.hpp"
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
      : ForwardOps(pm, log, threads), T_(T),
        cache_(1, static_cast<std::size_t>(pm.cfg.n_kv_heads), static_cast<std::size_t>(pm.cfg.head_dim()), T) {}

  // Logits of rows [first, T) only: rows before `first` are not scored.
  void run(std::span<const int> tokens, float* logits, std::size_t first, const ResidualTap& tap) {
    x_.resize(T_ * static_cast<std::size_t>(model().cfg.dim));
    embed(*this, tokens, x_.data());
    run_from(0, logits, first, tap);
  }

  // Layers [from, n_layers) and the head on x_, the residual stream entering layer `from`.
  void run_from(std::size_t from, float* logits, std::size_t first, const ResidualTap& tap) {
    for (std::size_t l = from; l < model().layers.size(); ++l) {
      if (tap) tap(l, x_.data());
      block_forward(*this, static_cast<int>(l), x_.data(), T_, 0, cache_.layer(0), s_);
    }
    if (tap) tap(model().layers.size(), x_.data());
    head_forward(*this, x_.data(), T_, first, logits, s_);
  }

  void resume(std::span<const float> x) { x_.assign(x.begin(), x.end()); }

 private:
  const std::size_t T_;
  KvCache cache_;
  std::vector<float> x_;
  BlockScratch s_;
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
