// The two-layer MLP on ScaledTensors: forward, backward and the optimizer step.
#include <string>

#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "quant/scaled_mlp.hpp"

namespace lowp::quant {

MlpConfig::MlpConfig()
    : act(parse_format("e4m3")), weight(parse_format("e4m3")), grad(parse_format("e5m2")) {}

ScaledMlp::ScaledMlp(const MlpConfig& cfg, std::span<const float> w1, std::span<const float> w2,
                     const AdamConfig& adam)
    : cfg_(cfg), adam_(adam) {
  if (cfg.in == 0 || cfg.hidden == 0 || cfg.out == 0)
    throw Error("ScaledMlp: sizes in " + std::to_string(cfg.in) + ", hidden " + std::to_string(cfg.hidden) +
                ", out " + std::to_string(cfg.out) + " must be positive");
  if (w1.size() != cfg.hidden * cfg.in || w2.size() != cfg.out * cfg.hidden)
    throw Error("ScaledMlp: initial weights have " + std::to_string(w1.size()) + " and " +
                std::to_string(w2.size()) + " elements, expected " + std::to_string(cfg.hidden * cfg.in) +
                " and " + std::to_string(cfg.out * cfg.hidden));
  const Format& m = adam.master;
  w1_ = scaled_auto(w1, cfg.hidden, cfg.in, m);
  w2_ = scaled_auto(w2, cfg.out, cfg.hidden, m);
  b1_ = scaled_from_data(std::vector<float>(cfg.hidden), 1, cfg.hidden, m, 1.0);
  b2_ = scaled_from_data(std::vector<float>(cfg.out), 1, cfg.out, m, 1.0);
}

ScaledMlp::Activations ScaledMlp::run(const ScaledTensor& x) const {
  if (x.cols != cfg_.in)
    throw Error("ScaledMlp: input has " + std::to_string(x.cols) + " columns, expected " + std::to_string(cfg_.in));
  Activations s;
  s.x = cast(x, cfg_.act);
  s.w1 = cast(w1_, cfg_.weight);
  s.w2 = cast(w2_, cfg_.weight);
  s.h = matmul_nt(s.x, s.w1, cfg_.act);
  if (cfg_.bias) s.h = add(s.h, cast(b1_, cfg_.act));
  s.a = silu(s.h);
  s.y = matmul_nt(s.a, s.w2, cfg_.act);
  if (cfg_.bias) s.y = add(s.y, cast(b2_, cfg_.act));
  return s;
}

ScaledTensor ScaledMlp::forward(const ScaledTensor& x) const { return run(x).y; }

double ScaledMlp::train_step(const ScaledTensor& x, const ScaledTensor& t) {
  check_scaled(t, "ScaledMlp target");
  const Activations s = run(x);
  if (t.rows != s.y.rows || t.cols != s.y.cols)
    throw Error("ScaledMlp: target is " + std::to_string(t.rows) + "x" + std::to_string(t.cols) + ", output " +
                std::to_string(s.y.rows) + "x" + std::to_string(s.y.cols));
  const double batch = static_cast<double>(x.rows);
  double loss = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const double e = static_cast<double>(s.y.data[i]) * s.y.scale - static_cast<double>(t.data[i]) * t.scale;
    loss += e * e;
  }
  loss /= 2 * batch;

  // dL/dy = (y - t) / batch; the batch factor only moves the scale when batch is a power of two.
  const ScaledTensor dy = cfg_.grad_rescale.backward(
      mul_scalar(sub(s.y, t, cfg_.grad), static_cast<float>(1 / batch)));
  const ScaledTensor dw2 = matmul(transpose(dy), s.a, cfg_.grad);
  const ScaledTensor da = matmul(dy, s.w2, cfg_.grad);
  const ScaledTensor dh = silu_backward(s.h, da);
  const ScaledTensor dw1 = matmul(transpose(dh), s.x, cfg_.grad);
  if (cfg_.bias) {
    const ScaledTensor db1 = sum_rows(dh), db2 = sum_rows(dy);
    ScaledTensor* p[] = {&w1_, &w2_, &b1_, &b2_};
    const ScaledTensor* g[] = {&dw1, &dw2, &db1, &db2};
    adam_.step(p, g);
  } else {
    ScaledTensor* p[] = {&w1_, &w2_};
    const ScaledTensor* g[] = {&dw1, &dw2};
    adam_.step(p, g);
  }
  return loss;
}

}  // namespace lowp::quant
