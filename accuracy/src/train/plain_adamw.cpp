#include "train/plain_adamw.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::train {

PlainAdamW::PlainAdamW(AdamWConfig cfg, std::span<const std::size_t> sizes) : cfg_(cfg) {
  for (std::size_t n : sizes) {
    m_.emplace_back(n, 0.0f);
    v_.emplace_back(n, 0.0f);
  }
}

double PlainAdamW::update(std::size_t i, float* w, const float* g, std::size_t n, double lr, bool decay) {
  auto& m = m_.at(i);
  auto& v = v_.at(i);
  if (n != m.size()) throw Error("AdamW: tensor " + std::to_string(i) + " changed size");
  const double t = static_cast<double>(t_ + 1);
  const double c1 = 1.0 - std::pow(cfg_.beta1, t), c2 = 1.0 - std::pow(cfg_.beta2, t);
  double ratio = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const double gj = g[j];
    const double mj = cfg_.beta1 * m[j] + (1.0 - cfg_.beta1) * gj;
    const double vj = cfg_.beta2 * v[j] + (1.0 - cfg_.beta2) * gj * gj;
    m[j] = static_cast<float>(mj);
    v[j] = static_cast<float>(vj);
    const double vhat = vj / c2;
    if (vhat > 0) ratio += gj * gj / vhat;
    double wj = w[j];
    if (decay) wj -= lr * cfg_.weight_decay * wj;
    wj -= lr * (mj / c1) / (std::sqrt(vhat) + cfg_.eps);
    w[j] = static_cast<float>(wj);
  }
  return ratio;
}

std::vector<std::uint8_t> PlainAdamW::save() const {
  std::vector<std::uint8_t> out(sizeof t_);
  std::memcpy(out.data(), &t_, sizeof t_);
  for (const auto* s : {&m_, &v_})
    for (const auto& x : *s) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(x.data());
      out.insert(out.end(), p, p + x.size() * sizeof(float));
    }
  return out;
}

void PlainAdamW::load(std::span<const std::uint8_t> bytes) {
  std::size_t want = sizeof t_;
  for (const auto& x : m_) want += 2 * x.size() * sizeof(float);
  if (bytes.size() != want)
    throw Error("AdamW state has " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(want));
  std::memcpy(&t_, bytes.data(), sizeof t_);
  std::size_t at = sizeof t_;
  for (auto* s : {&m_, &v_})
    for (auto& x : *s) {
      std::memcpy(x.data(), bytes.data() + at, x.size() * sizeof(float));
      at += x.size() * sizeof(float);
    }
}

}  // namespace lowp::accuracy::train
