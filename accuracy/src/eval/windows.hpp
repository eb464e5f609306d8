// evaluate() one window at a time (private to lowp_accuracy): the model sweep splits a run's
// windows across MPI ranks, and evaluate() is the same loop over every window.
#pragma once
#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "lowp/accuracy/eval.hpp"
#include "model/llama.hpp"

namespace lowp::accuracy::detail {

// The windows evaluate() cuts n tokens into: [w ctx, min(n, (w + 1) ctx)).
struct Windows {
  std::size_t n = 0, ctx = 0;
  std::size_t count() const { return ctx ? (n + ctx - 1) / ctx : 0; }
  std::size_t start(std::size_t w) const { return w * ctx; }
  std::size_t length(std::size_t w) const { return std::min(ctx, n - start(w)); }
  // Positions scored in window w: t in [first, T - 1), first = 0 (score_all) or T / 2.
  std::size_t scored(std::size_t w, bool score_all) const;
};

// The windows of evaluate(model, tokens, ., opt); throws lowp::Error as evaluate() for bad
// tokens or options.
Windows windows_for(const LlamaModel& model, std::span<const int> tokens, const EvalOptions& opt);

class WindowEvaluator {
 public:
  // Validates the tokens and options, checks the memory budget, prepares the recipe's weights
  // (throws lowp::Error as evaluate()). Bounds the OpenMP team to opt.threads while it lives.
  WindowEvaluator(const LlamaModel& model, std::span<const int> tokens, const Recipe& recipe, const EvalOptions& opt);
  ~WindowEvaluator();
  WindowEvaluator(const WindowEvaluator&) = delete;
  WindowEvaluator& operator=(const WindowEvaluator&) = delete;

  const Windows& windows() const { return windows_; }
  const std::vector<TensorError>& weight_errors() const { return pm_.weight_errors; }
  // Appends window w's scored positions (and its logits with keep_logits) to `run`; returns the
  // errors of its quantization points summed over the window's calls, in first-met order.
  std::vector<TensorError> run(std::size_t w, EvalRun& run);

 private:
  std::span<const int> tokens_;
  EvalOptions opt_;
  Windows windows_;
  int threads_ = 1, saved_threads_ = 1;
  PreparedModel pm_;
  std::vector<float> logits_;
};

}  // namespace lowp::accuracy::detail
