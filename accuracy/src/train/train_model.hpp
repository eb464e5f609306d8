// What the training loop (trainer.cpp) holds: a trainable Llama, whichever way its tensors are
// represented. TrainLlama (float32 tensors, each linear a quant::QuantLinear) and ScalifyLlama
// (every tensor a quant::ScaledTensor) implement it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "lowp/quant/linear.hpp"
#include "model/tensors.hpp"
#include "optim/optimizer.hpp"

namespace lowp::accuracy::train {

// One parameter tensor: float32 values (the master weights the optimizer updates) and the
// float32 gradient the backward adds into.
struct TrainParam {
  std::string name;  // "tok_embeddings", "layers.<l>.wq", "norm", "output", ...
  int layer = -1;    // -1: not in a block
  float* value = nullptr;
  float* grad = nullptr;
  std::size_t size = 0;
  bool matrix = false;  // a weight matrix (takes weight decay), not a norm gain or a bias
};

// Per linear, the quantized GEMM operands' statistics (QuantLinear::collect_stats order).
struct TrainLinearStats {
  int layer = 0;       // -1: the classifier
  std::string linear;  // "wq" ..., "classifier"
  std::array<quant::OperandStats, 6> ops;
};

// A trainable layer's tensors (V = std::vector<float>) or their read-only values (V = const
// std::vector<float>), by row of the tensor table (model/tensors.hpp's kLayerTensors); null or
// empty: the layer has no such tensor (no biases, no QK-norm).
template <class V>
using LayerTensors = std::array<V*, detail::kLayerTensors.size()>;

// The trained tensors as a model to save or evaluate (the config's architecture kept);
// `classifier` empty when tied.
LlamaModel trained_model(const LlamaConfig& c, const std::vector<float>& embedding,
                         std::span<const LayerTensors<const std::vector<float>>> layers,
                         const std::vector<float>& final_norm, const std::vector<float>& classifier);

// One layer's tensors and their gradients, for params().
struct LayerParams {
  LayerTensors<std::vector<float>> value, grad;
};
// TrainModel::params() of both trainable Llamas, in checkpoint order (the table's); `classifier`
// empty when tied.
std::vector<TrainParam> param_list(std::vector<float>& embedding, std::vector<float>& d_embedding,
                                   std::span<const LayerParams> layers, std::vector<float>& final_norm,
                                   std::vector<float>& d_final_norm, std::vector<float>& classifier,
                                   std::vector<float>& d_classifier);

class TrainModel {
 public:
  virtual ~TrainModel() = default;
  // B sequences of T tokens (row-major B x T, each from position 0). With targets (B x T)
  // returns the mean cross-entropy in nats; without, NaN. `seed` drives this step's randomness.
  virtual double forward(std::span<const int> tokens, std::span<const int> targets, std::size_t B, std::size_t T,
                         int threads, std::uint64_t seed) = 0;
  // Adds d(loss)/d(parameter) of the last forward (which had targets) into the gradients.
  // `loss_rows`: the token count the loss is a mean over (0: this forward's B*T); a
  // micro-batch passes its whole batch's, so micro-batch gradients add up to the batch's.
  virtual void backward(int threads, std::uint64_t seed, std::size_t loss_rows = 0) = 0;
  virtual void zero_grad() = 0;
  // In checkpoint order (model/tensors.hpp's): embedding, then per layer attn_norm wq wk wv wo
  // (bq bk bv bo when the model has them) ffn_norm w_gate w_down w_up, then the final norm and
  // the untied classifier.
  virtual std::vector<TrainParam> params() = 0;
  // Call after writing parameter values (cached low-precision weights are rebuilt).
  virtual void weights_changed() = 0;
  virtual LlamaModel to_model() const = 0;
  // Step-to-step state besides the weights (e.g. amax histories), as bytes; load throws
  // lowp::Error when the bytes do not fit.
  virtual std::vector<std::uint8_t> save_linear_state() const = 0;
  virtual void load_linear_state(std::span<const std::uint8_t> bytes) = 0;
  // Delayed scaling over the micro-batches of a step: while deferred, amaxes are held back;
  // take_pending_amax() returns them (concatenated) and commit_amax() enters their maxima.
  virtual void defer_amax(bool on) = 0;
  virtual std::vector<float> take_pending_amax() = 0;
  virtual void commit_amax(std::span<const float> amax) = 0;
  virtual void collect_stats(bool on) = 0;
  virtual std::vector<TrainLinearStats> take_stats() = 0;
  // Name of the first activation of the last forward holding NaN or Inf ("" if none).
  virtual std::string first_nonfinite_activation() const = 0;
};

// The optimizer's view of `net`'s parameters, in params() order: the matrices take weight
// decay, the norm gains and biases do not.
std::vector<lowp::train::ParamTensor> optimizer_tensors(TrainModel& net);

}  // namespace lowp::accuracy::train
