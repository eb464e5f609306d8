// The training Llama of llama_train.hpp with every tensor a quant::ScaledTensor (Scalify,
// Balança et al., Graphcore 2024): low-precision data times one power-of-two scale, the scale of
// each result computed from its inputs' scales by the op rules of lowp/quant/scaled_tensor.hpp.
//
// Precision plan (the `scalify` training recipe): weights and activations E4M3, gradients E5M2,
// every op's result cast to its format (nearest even, saturating); a recipe may store the
// tensors that are not GEMM operands in another format (ScalifyConfig, recipe/scalify_config.hpp). Nothing is measured per GEMM;
// the only statistics taken are the ones Scalify places explicitly (see scalify_llama.cpp, "Where
// the scales are measured"). The master weights stay float32 for the trainer's Optimizer; the
// gradients it receives are the values (scale * data) of E5M2 ScaledTensors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "lowp/formats/format.hpp"
#include "lowp/quant/scaled_tensor.hpp"
#include "recipe/scalify_config.hpp"
#include "train/train_model.hpp"

namespace lowp::accuracy::train {

class ScalifyLlama : public TrainModel {
 public:
  // Throws lowp::Error when the model is invalid.
  explicit ScalifyLlama(const LlamaModel& m, const ScalifyConfig& cfg = {});

  const LlamaConfig& config() const { return c_; }
  double forward(std::span<const int> tokens, std::span<const int> targets, std::size_t B, std::size_t T,
                 int threads, std::uint64_t seed) override;
  void backward(int threads, std::uint64_t seed, std::size_t loss_rows = 0) override;
  void zero_grad() override;
  std::vector<TrainParam> params() override;
  void weights_changed() override;
  LlamaModel to_model() const override;
  // No state besides the weights: the weights' scales are derived from them (empty bytes).
  std::vector<std::uint8_t> save_linear_state() const override { return {}; }
  void load_linear_state(std::span<const std::uint8_t> bytes) override;
  // No amax histories: nothing to defer (take gives none, commit accepts none).
  void defer_amax(bool) override {}
  std::vector<float> take_pending_amax() override { return {}; }
  void commit_amax(std::span<const float> amax) override;
  // No QuantLinear operand statistics: the op rules keep no float32 copy to compare with.
  void collect_stats(bool) override {}
  std::vector<TrainLinearStats> take_stats() override { return {}; }
  std::string first_nonfinite_activation() const override;

  // For tests: the scaled tensors of the last forward / backward by name: "x" (embedding rows),
  // "layers.<l>.<x_in|xn1|q|k|v|att|x_mid|xn2|g|u|h>", "x_final", "xn_final", "logits",
  // "dlogits", "dx" (the gradient reaching the embedding), "layers.<l>.dx_mid" (the gradient
  // at the FFN block's input), "layers.<l>.d<wq..w_down>" (weight gradients).
  const quant::ScaledTensor& tensor(const std::string& name) const;

 private:
  struct Layer {
    std::vector<float> attn_norm, ffn_norm, d_attn_norm, d_ffn_norm;
    std::vector<float> w[7], dw[7];             // master weights wq wk wv wo gate up down (out x in)
    quant::ScaledTensor gain1, gain2, lw[7];    // their low-precision casts
    // Saved by the forward for the backward.
    quant::ScaledTensor x_in, xn1, q, k, v, att, x_mid, xn2, g, u, sg, h;
    std::vector<quant::ScaledTensor> p;  // per (sequence, head): causal softmax, T x T
    // Saved by the backward for tests.
    quant::ScaledTensor dx_mid, dlw[7];
  };
  // A layer's tensors (grad: their gradients) by row of the tensor table; for a const Layer,
  // read-only values.
  template <class L>
  static auto tensors(L& layer, bool grad);
  quant::ScaledTensor rope(const quant::ScaledTensor& x, std::size_t heads, bool inverse) const;
  quant::ScaledTensor attention_forward(Layer& L, int threads) const;
  void attention_backward(Layer& L, const quant::ScaledTensor& datt, quant::ScaledTensor& dq, quant::ScaledTensor& dk,
                          quant::ScaledTensor& dv, int threads) const;

  LlamaConfig c_;
  ScalifyConfig cfg_;
  std::size_t dim_, kv_, hd_, qd_, vocab_;
  std::size_t B_ = 0, T_ = 0;
  std::vector<float> embedding_, d_embedding_, final_norm_, d_final_norm_, classifier_, d_classifier_;
  quant::ScaledTensor emb_, gain_final_, cls_;  // low-precision casts (cls_ only when untied)
  std::vector<Layer> layers_;
  std::vector<float> rope_cos_, rope_sin_;
  std::vector<int> tokens_, targets_;
  quant::ScaledTensor x0_, x_final_, xn_final_, logits_, dlogits_, dx0_;
};

}  // namespace lowp::accuracy::train
