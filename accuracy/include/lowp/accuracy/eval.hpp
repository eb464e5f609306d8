// Teacher-forced evaluation of a Llama model under a recipe: batched prefill over windows of
// `ctx` tokens, causal mask, scoring the second half of each window (llama.cpp's perplexity
// convention) or every position. With `bos` set, each window's first token is replaced by BOS
// as llama.cpp does; one difference remains: a trailing partial window is evaluated (its second
// half scored) rather than dropped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include "lowp/accuracy/calibrate.hpp"
#include "lowp/accuracy/model.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/accuracy/tensor_error.hpp"

namespace lowp::accuracy {

struct EvalOptions {
  int ctx = 0;              // window length; 0: min(model seq_len, token count); may exceed seq_len
  bool score_all = false;   // score every position (default: second half of each window)
  bool keep_logits = false; // keep the logits of every position (for --logits-out)
  bool keep_log_probs = true; // keep each scored row's log-softmax (compare() needs them); off: targets and NLL only
  int threads = 0;          // 0: all
  int bos = -1;             // >= 0: each window's first token is replaced by this id (llama.cpp perplexity)
  // The calibration text of a recipe with weights.calibrate or a static act.scale / attn.scale
  // (docs/calibration.md).
  std::shared_ptr<const CalibrationText> calib;
  // Called after each window with (tokens done, tokens total).
  std::function<void(std::size_t, std::size_t)> progress;
};

struct EvalRun {
  std::size_t vocab = 0;
  std::vector<int> targets;       // the token each scored position predicts
  std::vector<float> log_probs;   // scored x vocab, float32 log-softmax rows (keep_log_probs only)
  std::vector<float> logits;      // positions x vocab (keep_logits only); row t after token t
  double nll_sum = 0;             // over scored positions
  std::size_t nonfinite = 0;      // scored rows with a NaN/Inf logit
  std::vector<TensorError> tensor_errors;
  std::size_t scored() const { return targets.size(); }
};

// Throws lowp::Error for token ids outside [0, vocab), an empty token list, or a negative ctx. NaN produced by a recipe is not an error: it shows in `nonfinite`.
EvalRun evaluate(const LlamaModel& model, std::span<const int> tokens, const Recipe& recipe,
                 const EvalOptions& opt = {});

}  // namespace lowp::accuracy
