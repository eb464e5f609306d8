// Adam with its moments stored as low-precision ScaledTensors.
#include <cmath>
#include <string>

#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "quant/scaled_mlp.hpp"

namespace lowp::quant {

AdamConfig::AdamConfig() : state(parse_format("float16")), master(parse_format("float32")) {}

void ScaledAdam::step(std::span<ScaledTensor* const> params, std::span<const ScaledTensor* const> grads) {
  if (params.size() != grads.size())
    throw Error("ScaledAdam: " + std::to_string(params.size()) + " parameters but " +
                std::to_string(grads.size()) + " gradients");
  for (std::size_t k = 0; k < params.size(); ++k) {
    check_scaled(*params[k], "ScaledAdam parameter");
    check_scaled(*grads[k], "ScaledAdam gradient");
  }
  if (m_.empty()) {
    for (const ScaledTensor* p : params) {
      m_.push_back(scaled_from_data(std::vector<float>(p->size()), p->rows, p->cols, cfg_.state, 1.0));
      r_.push_back(m_.back());
    }
  }
  if (m_.size() != params.size())
    throw Error("ScaledAdam: " + std::to_string(params.size()) + " parameters, " +
                std::to_string(m_.size()) + " at the first step");
  ++t_;
  const double b1 = cfg_.beta1, b2 = cfg_.beta2;
  const double c1 = 1 - std::pow(b1, static_cast<double>(t_));
  const double c2 = std::sqrt(1 - std::pow(b2, static_cast<double>(t_)));
  for (std::size_t k = 0; k < params.size(); ++k) {
    ScaledTensor& p = *params[k];
    const ScaledTensor& g = *grads[k];
    if (g.rows != p.rows || g.cols != p.cols || m_[k].rows != p.rows || m_[k].cols != p.cols)
      throw Error("ScaledAdam: parameter " + std::to_string(k) + " is " + std::to_string(p.rows) + "x" +
                  std::to_string(p.cols) + ", its gradient " + std::to_string(g.rows) + "x" +
                  std::to_string(g.cols) + ", its state " + std::to_string(m_[k].rows) + "x" +
                  std::to_string(m_[k].cols));
    const std::size_t n = p.size();
    std::vector<float> pv(n), mv(n), rv(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double gi = static_cast<double>(g.data[i]) * g.scale;
      const double m = b1 * m_[k].data[i] * m_[k].scale + (1 - b1) * gi;
      const double r_old = static_cast<double>(r_[k].data[i]) * r_[k].scale;
      const double r = std::sqrt(b2 * r_old * r_old + (1 - b2) * gi * gi);
      const double w = static_cast<double>(p.data[i]) * p.scale;
      pv[i] = static_cast<float>(w - cfg_.lr * ((m / c1) / (r / c2 + cfg_.eps) + cfg_.weight_decay * w));
      mv[i] = static_cast<float>(m);
      rv[i] = static_cast<float>(r);
    }
    p = scaled_auto(pv, p.rows, p.cols, cfg_.master);
    m_[k] = scaled_auto(mv, p.rows, p.cols, cfg_.state);
    r_[k] = scaled_auto(rv, p.rows, p.cols, cfg_.state);
  }
}

}  // namespace lowp::quant
