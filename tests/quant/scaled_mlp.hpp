// Test support for test_mlp_scaled.cpp (not part of lowp_quant): a two-layer MLP,
// y = W2 silu(W1 x + b1) + b2, trained with forward and backward entirely on ScaledTensors
// (scale propagation, lowp/quant/scaled_tensor.hpp), and an Adam optimizer whose state is
// stored as ScaledTensors in a low-precision format (float16 by default).
//
// Precision plan (the usual FP8 one): weights and activations E4M3, gradients E5M2. The master
// weights are ScaledTensors in `master` format; each step casts them to the weight format.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "lowp/formats/format.hpp"
#include "lowp/quant/scaled_tensor.hpp"

namespace lowp::quant {

struct AdamConfig {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.0f;  // decoupled (AdamW)
  Format state;               // format of both moments; default float16
  Format master;              // format of the master weights; default float32
  AdamConfig();
};

// Adam over a list of parameters. The moments m and sqrt(v) are ScaledTensors in
// `state` format, rescaled to unit RMS after every step, so their float16 data neither
// overflow nor underflow whatever the gradients' scale. (sqrt(v) is stored rather than v: it
// has the magnitude of m, so both fit the same range and v's squared range never has to.)
class ScaledAdam {
 public:
  explicit ScaledAdam(const AdamConfig& cfg) : cfg_(cfg) {}
  // params[i] -= update(grads[i]); params are rewritten in cfg.master format. The moment
  // buffers are created on the first call; the shapes must not change afterwards.
  void step(std::span<ScaledTensor* const> params, std::span<const ScaledTensor* const> grads);
  const AdamConfig& config() const { return cfg_; }
  const std::vector<ScaledTensor>& first_moments() const { return m_; }
  const std::vector<ScaledTensor>& second_moment_roots() const { return r_; }
  long steps() const { return t_; }

 private:
  AdamConfig cfg_;
  std::vector<ScaledTensor> m_, r_;
  long t_ = 0;
};

struct MlpConfig {
  std::size_t in = 0, hidden = 0, out = 0;
  bool bias = true;
  Format act, weight, grad;  // default E4M3, E4M3, E5M2
  // Backward-only rescaling of the loss gradient (the gradient of a converging loss shrinks).
  DynamicRescale grad_rescale{RescaleStat::rms, DynamicRescale::Pass::backward};
  MlpConfig();
};

class ScaledMlp {
 public:
  // Initial float32 weights: w1 is hidden x in, w2 out x hidden, row-major; biases start at 0.
  ScaledMlp(const MlpConfig& cfg, std::span<const float> w1, std::span<const float> w2,
            const AdamConfig& adam = {});

  ScaledTensor forward(const ScaledTensor& x) const;  // batch x out
  // One step on the loss sum((y - t)^2) / (2 batch); returns the loss of the forward pass
  // (computed in double from the scaled output values).
  double train_step(const ScaledTensor& x, const ScaledTensor& t);

  // The master parameters (values are scale * data).
  const ScaledTensor& w1() const { return w1_; }
  const ScaledTensor& w2() const { return w2_; }
  const ScaledTensor& b1() const { return b1_; }
  const ScaledTensor& b2() const { return b2_; }
  const ScaledAdam& optimizer() const { return adam_; }

 private:
  struct Activations {
    ScaledTensor x, w1, w2, h, a, y;
  };
  Activations run(const ScaledTensor& x) const;

  MlpConfig cfg_;
  ScaledTensor w1_, w2_, b1_, b2_;
  ScaledAdam adam_;
};

}  // namespace lowp::quant
