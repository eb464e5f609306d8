// The evaluator's Llama as a trainable model: forward over a batch of B sequences of T tokens,
// cross-entropy loss, and the complete backward pass (private to lowp_accuracy).
//
// Every linear of a block (wq wk wv wo w_gate w_up w_down) is a quant::QuantLinear, so its
// forward, dgrad and wgrad GEMMs follow the recipe given for it; so is the classifier unless its
// recipe is fp32. The embedding, the norms, the biases and the attention matmuls stay in
// float32. The architecture is the evaluator's: GQA, head_dim, q/k/v/o biases, RoPE theta and
// scaling, tied or untied classifier.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "lowp/quant/linear.hpp"
#include "model/attention.hpp"
#include "model/block.hpp"
#include "train/train_model.hpp"

namespace lowp::accuracy::train {

// A model of config c with GPT-2 style initial weights from `seed`: N(0, 0.02) embedding and
// linears, residual output projections (wo, w_down) N(0, 0.02 / sqrt(2 n_layers)), norms 1.
LlamaModel init_model(const LlamaConfig& c, std::uint64_t seed, bool tied = true);

class TrainLlama : public TrainModel {
 public:
  // The recipe of block linear `linear` (0..6: wq wk wv wo gate up down, LinearKind order)
  // of layer `layer`.
  using LinearFor = std::function<quant::LinearRecipe(int linear, std::size_t layer)>;
  // Throws lowp::Error when the model is invalid or a recipe cannot take its shapes.
  TrainLlama(const LlamaModel& m, const quant::LinearRecipe& linear);
  // A `classifier` recipe other than the fp32 preset makes the classifier (the embedding when
  // tied) a QuantLinear of that recipe too; otherwise it is the float32 GEMM of lowp eval.
  TrainLlama(const LlamaModel& m, const LinearFor& linear_for, const quant::LinearRecipe* classifier = nullptr);

  const LlamaConfig& config() const { return c_; }
  bool tied() const { return classifier_.empty(); }

  // Runs B sequences of T tokens (row-major B x T, each from position 0). With targets (B x T)
  // returns the mean cross-entropy in nats (double accumulation); without, NaN. `seed` drives
  // the linears' stochastic rounding and random rotations for this step.
  double forward(std::span<const int> tokens, std::span<const int> targets, std::size_t B, std::size_t T,
                 int threads, std::uint64_t seed) override;
  // (B*T) x vocab logits of the last forward.
  const std::vector<float>& logits() const { return logits_; }
  // Adds d(loss)/d(parameter) of the last forward (which had targets) into the gradients.
  // `loss_rows`: the token count the loss is a mean over (0: this forward's B*T); a
  // micro-batch passes its whole batch's, so micro-batch gradients add up to the batch's.
  void backward(int threads, std::uint64_t seed, std::size_t loss_rows = 0) override;
  void zero_grad() override;

  using Param = TrainParam;
  // In checkpoint order: embedding, then per layer attn_norm wq wk wv wo ffn_norm w_gate w_down
  // w_up, then the final norm and the untied classifier.
  std::vector<Param> params() override;
  // Call after writing parameter values (the linears drop their cached quantized weights).
  void weights_changed() override;
  // The current weights as a model (to save, or to evaluate).
  LlamaModel to_model() const override;
  // The linears' step-to-step state (delayed-scaling amax histories), layer by layer, as
  // bytes; load_linear_state() throws lowp::Error when the bytes do not fit.
  std::vector<std::uint8_t> save_linear_state() const override;
  void load_linear_state(std::span<const std::uint8_t> bytes) override;
  // Delayed scaling over the micro-batches of a step (QuantLinear::defer_amax), for every
  // linear in save_linear_state()'s order: the pending amaxes, concatenated, and their commit.
  void defer_amax(bool on) override;
  std::vector<float> take_pending_amax() override;
  void commit_amax(std::span<const float> amax) override;
  // Per block linear, the quantized GEMM operands' statistics (QuantLinear::collect_stats).
  using LinearStats = TrainLinearStats;
  void collect_stats(bool on) override;
  std::vector<LinearStats> take_stats() override;
  // Name of the first activation of the last forward holding NaN or Inf ("" if none).
  std::string first_nonfinite_activation() const override;

  // One quantized linear's GEMMs as a pass ran them (`lowp probe`): after its forward (dy and dw
  // null, out = Y) or its backward (out = dX; dw: its weight gradient, which the pass added into). x: its input (rows x in), W: lin->weight() (out_features x in). linear: 0..6 (wq wk wv wo
  // gate up down), 7 the quantized classifier (layer -1).
  struct GemmView {
    int layer = 0, linear = 0;
    const quant::QuantLinear* lin = nullptr;
    const float *x = nullptr, *dy = nullptr, *out = nullptr, *dw = nullptr;
    std::size_t rows = 0, in = 0, out_features = 0;
  };
  // Called at each linear's forward and backward from now on (empty: none).
  void observe_gemms(std::function<void(const GemmView&)> f) { observer_ = std::move(f); }
  // Whether a pass's bits depend on its seed (quant::uses_seed of any of its linears).
  bool uses_seed() const;

 private:
  struct Layer {
    std::vector<float> attn_norm, ffn_norm, d_attn_norm, d_ffn_norm;
    std::vector<quant::QuantLinear> lin;  // wq wk wv wo gate up down
    std::vector<float> bias[4], dbias[4];  // bq bk bv bo: empty when the model has none
    std::vector<float> qn, kn, dqn, dkn;   // QK-norm gains over a head: empty when the model has none
    // Saved by the forward for the backward: the block's tensors (acts.keep), gate and up.
    detail::BlockActs acts;
    std::vector<float> g, u;
  };
  class StepOps;  // the block's ops in training (llama_train.cpp)
  // A layer's tensors (grad: their gradients) by row of the tensor table; for a const Layer,
  // read-only values.
  template <class L>
  static auto tensors(L& layer, bool grad);
  detail::AttentionShape attention_shape() const;

  LlamaConfig c_;
  std::size_t dim_, kv_, hd_, qd_, hidden_, vocab_;
  std::size_t B_ = 0, T_ = 0;
  std::vector<float> embedding_, d_embedding_;
  std::vector<Layer> layers_;
  std::vector<float> final_norm_, d_final_norm_;
  std::vector<float> classifier_, d_classifier_;  // empty when tied
  std::unique_ptr<quant::QuantLinear> cls_;       // a quantized classifier: mirrors its weight
  std::vector<float> rope_cos_, rope_sin_;
  // Saved: tokens, targets, the final residual, its norm, logits.
  std::vector<int> tokens_, targets_;
  std::vector<float> x_final_, inv_final_, xn_final_, logits_;
  std::vector<double> ce_sum_;  // per row of the last forward with targets: sum of exp(logit - max)
  // The passes' scratch, kept between steps: fresh multi-megabyte vectors every step were page
  // faults every step.
  std::vector<float> dqk_, dx_, dxn_, dtmp_, dh_, dg_, du_, datt_, dq_, dk_, dv_;
  std::function<void(const GemmView&)> observer_;
  // Linear k of layer l (or the classifier): its forward / backward, then the observer.
  void lin_forward(std::size_t l, int k, const float* x, float* y, std::uint64_t seed);
  void lin_backward(std::size_t l, int k, const float* x, const float* dy, float* dx, std::uint64_t seed);
  void observe(std::size_t l, int k, const quant::QuantLinear& q, const float* x, const float* dy, const float* out,
               const float* dw) const;
};

}  // namespace lowp::accuracy::train
