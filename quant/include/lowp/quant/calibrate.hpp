// Calibrated weight quantization: the spec's codes and block scales chosen with calibration
// activations instead of round-to-nearest alone (docs/calibration.md has the definitions).
//
// A linear layer Y = X W^T: W is N x K (row-major, the reduction along K), X the calibration
// inputs, n x K. Every function returns a QuantizedTensor of `spec` (lowp's dequantize decodes
// it; its scales are representable in the spec's scale format) and is deterministic: the same
// bits at any thread count. Rules: every spec quantize() takes, except stochastic rounding
// (lowp::Error). NaN / Inf in W or X: lowp::Error.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "lowp/quant/quantize.hpp"

namespace lowp::quant {

// llama.cpp's importance matrix of one linear: per input column j, the mean over the n rows
// of x_j^2 (summed in double, rounded to float32).
std::vector<float> importance(const float* x, std::size_t n, std::size_t k);

// Round-to-nearest with each group's scale chosen to minimise sum_j imp[j] (w_j - q_j)^2 over
// its elements (imp indexed by column, size k) among candidate scales around the rule's own
// (which is always a candidate, so the weighted error never exceeds RTN's). The candidates,
// each representable in the rule's scale format:
//   amax / int / mse (float32 multipliers): the rule's scale for clip ratios r * amax,
//     r = 0.50, 0.52, ..., 1.10 (and the mse rule's own choice);
//   pow2: the rule's power of two times 2^-2 .. 2^2;
//   mx, ceil, even, rceil (E8M0): the rule's exponent -2 .. +2, within [-127, 127];
//   nvfp4 (UE4M3): the rule's block scale code -8 .. +8 codes (about one binade), within the
//     rule's range [2^-6, 448]; the float32 tensor scale stays the rule's;
//   none: no scale (RTN).
// Ties keep the rule's own scale.
QuantizedTensor quantize_weighted(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols,
                                  std::span<const float> imp);

// GPTQ (Frantar et al. 2022, IST-DASLab/gptq): H = 2 X^T X / n + damp * mean(diag H) * I,
// U the upper Cholesky factor of H^-1, columns quantized in order with the error fed forward
// through U, lazily in blocks of `block` columns. The block scales are fixed before the first
// column from the original weights, as MR-GPTQ (IST-DASLab/FP-Quant) does for MXFP4 / NVFP4:
// by the spec's rule, or by quantize_weighted with imp = diag(H) / 2 (the mean x_j^2).
// act_order: columns in descending diag(H) order (each keeps its own block's scale).
struct GptqOptions {
  double damp = 0.01;
  std::size_t block = 128;
  bool act_order = false;
  bool weighted_scales = false;
};
QuantizedTensor gptq(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols, const float* x,
                     std::size_t n, const GptqOptions& opt = {});
// The same from H = 2 X^T X / n (k x k, undamped), as gptq_hessian computes it, e.g. summed
// over calibration batches by the caller.
std::vector<float> gptq_hessian(const float* x, std::size_t n, std::size_t k);
QuantizedTensor gptq_from_hessian(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols,
                                  std::span<const float> hessian, const GptqOptions& opt = {});

// AWQ-style per-input-channel scaling (Lin et al. 2023, mit-han-lab/llm-awq auto_scale):
// s = m^alpha with m_j = mean over rows of |x_j|, clamped below at 1e-4 and divided by
// sqrt(max s * min s); alpha = i / grid for i = 0 .. grid - 1 (AWQ's 20 points). The alpha
// minimising ||X W^T - (X diag(1/s)) Q(W diag(s))^T||_F^2 (in double) is kept; alpha = 0
// (s = 1, plain RTN) wins ties. The layer then computes (X / s) deq(weight)^T: the caller
// folds 1/s into what produces X (the preceding RMSNorm's weight).
struct AwqOptions {
  std::size_t grid = 20;
};
struct AwqResult {
  std::vector<float> scales;  // s, size k
  double alpha = 0;
  double error = 0;      // the objective at alpha
  double rtn_error = 0;  // the objective at alpha = 0
  QuantizedTensor weight;  // Q(W diag(s))
};
AwqResult awq(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols, const float* x,
              std::size_t n, const AwqOptions& opt = {});

// Linears sharing one input X (q/k/v; gate/up), scaled together as auto_scale does, so that one
// s folds into their common RMSNorm: the objective is the sum of theirs.
struct WeightRef {
  const float* w = nullptr;
  std::size_t rows = 0;  // each W is rows x cols, cols shared with X
};
struct AwqGroupResult {
  std::vector<float> scales;
  double alpha = 0, error = 0, rtn_error = 0;
  std::vector<QuantizedTensor> weights;  // in the order given
};
AwqGroupResult awq_group(const QuantSpec& spec, std::span<const WeightRef> ws, std::size_t cols, const float* x,
                         std::size_t n, const AwqOptions& opt = {});

// The same from the statistics of X accumulated by the caller (e.g. over calibration windows):
// mean_abs[j] = mean over the rows of |x_j|, gram = X^T X (cols x cols, row-major; any positive
// multiple of it gives the same alpha). The objective is then always the Gram form.
AwqGroupResult awq_group_from_stats(const QuantSpec& spec, std::span<const WeightRef> ws, std::size_t cols,
                                    std::span<const double> mean_abs, std::span<const double> gram,
                                    const AwqOptions& opt = {});

}  // namespace lowp::quant
