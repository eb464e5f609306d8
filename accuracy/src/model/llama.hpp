// The Llama forward pass under a recipe (private to lowp_accuracy).
//
// prepare() turns a model and a recipe into the weights the forward pass runs on: QuaRot's
// rotations folded in, each linear's weight rotated and quantized once, q/k/v and gate/up
// fused into one GEMM when their inputs are quantized alike. forward_window() then runs a
// window of tokens through the model as batched prefill (model/block.hpp's block, layer by
// layer) and records the error of every quantization point it passes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lowp/accuracy/calibrate.hpp"
#include "lowp/accuracy/model.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/hadamard/rotation.hpp"
#include "lowp/quant/gemm.hpp"
#include "lowp/quant/interleaved_rows.hpp"
#include "lowp/quant/linear.hpp"
#include "lowp/quant/packed_weight.hpp"
#include "lowp/quant/quantize.hpp"
#include "model/block.hpp"
#include "model/error_log.hpp"

namespace lowp::accuracy::detail {

// One GEMM y = x W^T, x: T x k, W: n x k. The input is rotated (rot.kind != none) and
// quantized (act) online; W was rotated and quantized at preparation.
struct Linear {
  std::vector<std::string> act_points;  // "x.<kind>" of each linear this GEMM computes
  std::size_t n = 0, k = 0;
  std::vector<float> own;               // W when prepared here ...
  const float* w = nullptr;             // ... or the model's own float32 weight (nullptr: mapped in another type)
  quant::StoredMatrix weight;           // what the GEMM reads: own, or the model's weight as stored
  // own in its 4-bit packed form (MXFP4, NVFP4, int4 weights), with own's bits: what a one-row
  // product (a decode step) reads instead, about an eighth of the bytes.
  std::optional<quant::PackedWeight> packed;
  std::optional<quant::QuantSpec> act;
  hadamard::Rotation rot;
  std::unique_ptr<quant::QuantLinear> engine;  // SwitchBack: the real int8 GEMM
  bool int_act = false;  // act.ggml on a block type: quant::gemm_act through weight.act_product
  // Re-laid for one-row products (decoders): the model's own weight (`weight` reads it), or the
  // packed form (a one-row product reads it instead of `packed`).
  std::unique_ptr<const quant::InterleavedRows> interleaved;
};

// Linears whose outputs are concatenated column-wise ([q | k | v], [gate | up]).
using LinearGroup = std::vector<Linear>;

struct PreparedLayer {
  std::vector<float> attn_norm, ffn_norm;
  LinearGroup qkv, wo, gate_up, down;
  std::vector<float> qkv_bias, wo_bias;  // [bq | bk | bv] and bo, empty when the model has none
  std::vector<float> q_norm, k_norm;     // QK-norm gains over a head (head_dim), empty when the model has none
  // The layer's attention and KV-cache specs (the recipe's, its layer.<N>.* lines applied;
  // kv.group = head and pad folded in).
  std::optional<quant::QuantSpec> q, k, p, v, kv;
};

struct PreparedModel {
  LlamaConfig cfg;
  Recipe recipe;
  std::unique_ptr<LlamaModel> rotated;  // QuaRot's rotated copy of the model
  const float* embedding = nullptr;     // vocab x dim (nullptr when mapped in another type)
  quant::StoredMatrix embedding_view;   // the embedding as stored: rows widened per token
  std::vector<PreparedLayer> layers;
  std::vector<float> final_norm;
  LinearGroup classifier;
  hadamard::Rotation down_rotation;     // QuaRot's online Hadamard before down_proj
  hadamard::Rotation head_rotation;     // attn.rotate: over head_dim
  std::vector<float> rope_cos, rope_sin;  // positions x head_dim/2
  std::vector<TensorError> weight_errors;  // recorded while quantizing the weights
  // The float32 reference: a NaN/Inf in any tensor is an error naming the first one (a
  // quantized recipe's non-finite logits are a result, counted by evaluate()).
  bool check_finite = false;
  // Calibration: called with every linear group's input (rows x k) before it is quantized.
  std::function<void(int layer, const LinearGroup& group, const float* x, std::size_t rows)> capture;
  // act.scale / attn.scale = static: each static point's calibrated amax, by (layer, point).
  std::map<std::pair<int, std::string>, float> static_amax;
  // Static-scale calibration (static_scales.cpp): set, each static point hands it its input
  // (n elements) and quantizes with its dynamic scale instead of looking its amax up.
  std::function<void(int layer, const std::string& point, const float* x, std::size_t rows, std::size_t cols)> observe;
};

// True when the point `point` of a recipe (x.<kind>: a linear's input, under act.scale; q, k, v,
// kv.k, kv.v: under attn.scale; p never) takes a calibrated tensor-level scale with spec `s`.
bool static_point(const Recipe& r, const std::string& point, const quant::QuantSpec& s);

// weights.calibrate's result (calibrate.cpp): each calibrated linear's weight as the forward
// pass uses it (dequantized), and for AWQ the RMSNorm gains and v bias with the scales folded in.
struct CalibratedWeight {
  std::vector<float> w;  // rows x cols
  TensorError error;     // of the quantization (for AWQ, of the scaled weight it quantized)
};
struct CalibratedWeights {
  std::map<std::pair<int, LinearKind>, CalibratedWeight> linears;
  std::map<int, std::vector<float>> attn_norm, ffn_norm, bv;
  std::map<std::pair<int, std::string>, float> static_amax;  // act.scale / attn.scale = static
  const CalibratedWeight* find(int layer, LinearKind kind) const {
    const auto it = linears.find({layer, kind});
    return it == linears.end() ? nullptr : &it->second;
  }
};
// Computes them (model/calibration_cache.hpp caches them). `positions`: the evaluation's window
// length, used when text.ctx is 0. Throws lowp::Error naming the recipe for what it cannot do.
CalibratedWeights compute_calibrated_weights(const LlamaModel& model, const Recipe& recipe,
                                             const CalibrationText& text, std::size_t positions, int threads);

// Static scales (static_scales.cpp): the amax (or percentile) of each static point's input over
// the calibration text, in windows of static_scale_ctx (not the evaluation's window: evaluate()
// and the Decoder then share them), from the recipe's own forward
// pass with dynamic scales and `weights` (its weights.calibrate result, possibly empty).
std::map<std::pair<int, std::string>, float> compute_static_amax(const LlamaModel& model, const Recipe& recipe,
                                                                 const CalibrationText& text,
                                                                 const CalibratedWeights& weights, int threads);
// The window length of a calibration over `text` with windows of `ctx` (the last one shorter):
// lowp::Error for no tokens or a token outside the vocabulary.
std::size_t calibration_window(const LlamaModel& model, const CalibrationText& text, std::size_t ctx);
// Runs pm's forward pass over the calibration windows of T tokens (text.bos first, if given);
// the classifier on every row when `all_rows`, else on each window's last.
void run_calibration_windows(const PreparedModel& pm, const CalibrationText& text, std::size_t T, int threads,
                             bool all_rows = false);
// The window length of static-scale calibration: text.ctx, or else the model's seq_len.
std::size_t static_scale_ctx(const LlamaModel& model, const CalibrationText& text);

// Throws lowp::Error naming the recipe, the tensor and its shape when a spec does not fit.
// `positions`: the longest window the forward pass will run (RoPE tables cover 0..positions-1).
// `calibrated`: the recipe's calibrated weights, needed when it has weights.calibrate.
// `pack`: keep 4-bit weights packed too (Linear::packed), for one-row products (the decode step).
PreparedModel prepare(const LlamaModel& model, const Recipe& recipe, std::size_t positions,
                      const CalibratedWeights* calibrated = nullptr, bool pack = false);

// QuaRot (Ashkboos et al. 2024) on a copy of the model: RMSNorm gains folded into the next
// linears, the residual stream rotated by a randomized Hadamard R (embedding E R, input-side
// weights W R, output-side R^T W; block-diagonal and sign-free for a dim with no Kronecker
// Hadamard), and an online Hadamard before down_proj folded into w_down.
// Returns the rotation to apply online to the down_proj input.
hadamard::Rotation apply_quarot(LlamaModel& m, std::uint64_t seed);

inline constexpr float kFa3POffset = 256.0f;  // FlashAttention-3's Max_offset = 8 for FP8 P

// The recipe's quantized linears and quantization points on `rows` tokens, each point's error
// recorded in `log` (nullptr: not recorded, as in a decode step, which has no reference); as
// block_forward's BlockOps (model/block.hpp), pm's layers.
class ForwardOps : public BlockOps {
 public:
  ForwardOps(const PreparedModel& pm, ErrorLog* log, int threads) : pm_(pm), log_(log), threads_(threads) {}
  const PreparedModel& model() const { return pm_; }
  // y = x W^T for each linear of the group, outputs side by side (rows x sum n).
  void linear(const LinearGroup& group, const float* in, float* out, int l, std::size_t rows);
  // x <- fake_quant(x), recording the error under `point` (each of `points`).
  void quantize_point(const std::optional<quant::QuantSpec>& spec, float* x, std::size_t rows, std::size_t cols,
                      int l, const std::string& point);
  void quantize_point(const std::optional<quant::QuantSpec>& spec, float* x, std::size_t rows, std::size_t cols,
                      int l, const std::vector<std::string>& points);
  // lowp::Error naming the recipe, the point and its shape when `spec` cannot take rows x cols.
  void check_shape(const quant::QuantSpec& spec, std::size_t rows, std::size_t cols, const std::string& point,
                   int l) const;

  // BlockOps: layer l of pm; q, k, v from the [q | k | v] group's output; gate and up side by
  // side (stride 2 hidden); the points are the layer's kv, q, k, v and p specs.
  const LlamaConfig& config() const override { return pm_.cfg; }
  int threads() const override { return threads_; }
  Weights weights(int l) const override;
  const float* rope_cos() const override { return pm_.rope_cos.data(); }
  const float* rope_sin() const override { return pm_.rope_sin.data(); }
  void qkv(int l, const float* xn, std::size_t rows, float* q, float* k, float* v) override;
  void wo(int l, const float* att, std::size_t rows, float* out) override;
  GateUp gate_up(int l, const float* xn, std::size_t rows) override;
  void down(int l, const float* h, std::size_t rows, float* out) override;
  void rotate_heads(float* q, float* k, float* v, std::size_t rows) override;
  void unrotate_v(float* att, std::size_t rows) override;
  void point(int l, BlockPoint p, float* x, std::size_t rows, std::size_t cols) override;
  AttentionP p_point(int l, std::size_t rows, std::size_t keys) override;
  void p_done() override;
  void rotate_down(float* h, std::size_t rows) override;
  // The float32 reference only (pm.check_finite): lowp::Error naming the first tensor
  // (rows x cols) holding a NaN/Inf.
  void finite(const float* x, std::size_t cols, int l, const std::string& tensor, std::size_t rows) const override;

 private:
  const PreparedModel& pm_;
  ErrorLog* log_;
  const int threads_;
  std::vector<float> xq_, part_, before_, qkv_, gu_;
  std::vector<quant::StoredMatrix> mats_;  // a one-row group's weights and outputs (linear())
  std::vector<float*> outs_;
  std::vector<ErrorLog> head_logs_;  // attn.p's errors, one log per head (its own job's)
};

// x = the embedding rows of `tokens` (rows x dim).
void embed(ForwardOps& ops, std::span<const int> tokens, float* x);
// logits of rows [first, rows) of x (rows x dim, the residual stream after the last layer): the
// final RMSNorm, then the classifier (rows before `first` are left untouched). xn: scratch.
void head_forward(ForwardOps& ops, const float* x, std::size_t rows, std::size_t first, float* logits,
                  std::vector<float>& xn);

// logits (T x vocab) of the window `tokens` (positions 0..T-1), rows >= first_logit only (the
// classifier is most of a small model's work; unscored rows are left untouched).
// Prefix reuse (the sensitivity sweep): `tap`, when given, is called with (l, x), x the residual
// stream (T x dim) entering layer l, for l = 0..n_layers (n_layers: entering the final RMSNorm).
using ResidualTap = std::function<void(std::size_t layer, const float* x)>;
void forward_window(const PreparedModel& pm, std::span<const int> tokens, float* logits, ErrorLog& log,
                    int threads, std::size_t first_logit = 0, const ResidualTap& tap = {});
// forward_window from layer `from` on, given x (T x dim), the residual stream entering it:
// the same logits and the same errors of layers >= from, bit for bit, as the whole window.
void forward_window_from(const PreparedModel& pm, std::size_t from, std::span<const float> x, float* logits,
                         ErrorLog& log, int threads, std::size_t first_logit);
// forward_window_from for models pms[i] that differ only in layer `from` and have no
// quantization point after it (sensitivity's recipes over a float32 base): each runs layer
// `from` on x, then the layers after it and the head run once on the n streams side by side
// (B = n sequences, pms[0]'s weights), which reads those weights once for all n. logits[i]:
// pms[i]'s window, T x vocab; logs[i]: its errors. The same bits as forward_window_from of each.
void forward_stacked(std::span<const PreparedModel* const> pms, std::size_t from, std::span<const float> x,
                     std::span<float* const> logits, std::span<ErrorLog> logs, int threads, std::size_t first_logit);

}  // namespace lowp::accuracy::detail
