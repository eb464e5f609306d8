// A plain float32 AdamW (decoupled weight decay, bias correction), the placeholder the trainer
// uses until the optimizer module (train/optimizer.hpp: StableAdamW, low-precision master
// weights and moments) replaces it. State serializes to bytes for checkpoints and resume.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace lowp::accuracy::train {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
};

class PlainAdamW {
 public:
  PlainAdamW(AdamWConfig cfg, std::span<const std::size_t> sizes);
  // One update of tensor i (decay only when `decay`); call for every tensor, then next_step().
  // Returns sum over the tensor of g^2 / v_hat (v_hat after this update), for RMS(g^2/v).
  double update(std::size_t i, float* w, const float* g, std::size_t n, double lr, bool decay);
  void next_step() { ++t_; }
  std::int64_t step() const { return t_; }

  std::vector<std::uint8_t> save() const;
  // Throws lowp::Error when `bytes` does not fit these tensor sizes.
  void load(std::span<const std::uint8_t> bytes);

 private:
  AdamWConfig cfg_;
  std::int64_t t_ = 0;  // updates done
  std::vector<std::vector<float>> m_, v_;
};

}  // namespace lowp::accuracy::train
