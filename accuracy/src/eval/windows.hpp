// evaluate() one window at a time (private to lowp_accuracy): the model sweep splits a run's
// windows across MPI ranks, and evaluate() is the same loop over every window.
#pragma once
#include <algorithm>
#include <cstddef>
#include <memory>
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

// Appends a window's scored positions t in [first, T - 1) to `run` (T = tokens.size(); row t
// of `logits`, `vocab` floats, follows tokens[t]): the NLL of tokens[t + 1] and, with
// keep_log_probs, each row's log-softmax (in double, stored as float); a row with a non-finite
// logit counts in run.nonfinite. Rows run on the OpenMP team; NLLs are summed in row order.
void score_window(const float* logits, std::span<const int> tokens, std::size_t first, std::size_t vocab, EvalRun& run,
                  bool keep_log_probs = true);

// The windows of evaluate(model, tokens, ., opt); throws lowp::Error as evaluate() for bad
// tokens or options.
Windows windows_for(const LlamaModel& model, std::span<const int> tokens, const EvalOptions& opt);

// The bytes evaluate(model, ., recipe, opt) allocates for n tokens in windows of ctx, which
// WindowEvaluator checks against the memory budget (--max-memory).
double evaluation_bytes(const LlamaModel& model, const Recipe& recipe, std::size_t n, std::size_t ctx,
                        const EvalOptions& opt);

// Window w's residual stream entering layer `layer` (T x dim) and the errors of the layers
// before it, from a recipe that computes what this one computes before that layer.
struct WindowPrefix {
  std::size_t layer = 0;
  std::span<const float> x;
  std::vector<TensorError> errors;  // in ErrorLog::entries() order
};

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
  // `from`: run window w from that prefix on (the same results, bit for bit); `tap`: see the
  // residual stream entering each layer (forward_window's).
  std::vector<TensorError> run(std::size_t w, EvalRun& run, const WindowPrefix* from = nullptr,
                               const ResidualTap& tap = {});
  // run(w, runs[i], &from) of each evaluator, when their recipes differ only in layer
  // from.layer and have no quantization point after it (forward_stacked: the layers after it
  // and the head run once for all of them). Same options and tokens in each.
  static std::vector<std::vector<TensorError>> run_stacked(std::span<WindowEvaluator* const> evs, std::size_t w,
                                                           std::span<EvalRun> runs, const WindowPrefix& from);

 private:
  // Window w's tokens [start, start + T), its first scored row and its first computed logit row.
  struct Rows {
    std::size_t start, T, first, first_logit;
  };
  Rows rows(std::size_t w) const;
  // Appends window w's scored positions (and its logits with keep_logits) from logits_ to `run`.
  void score(const Rows& r, EvalRun& run) const;

  std::span<const int> tokens_;
  EvalOptions opt_;
  Windows windows_;
  int threads_ = 1, saved_threads_ = 1;
  PreparedModel pm_;
  // Uninitialised: the first touch of its pages is the head's GEMM, on every thread.
  std::unique_ptr<float[]> logits_;
};

}  // namespace lowp::accuracy::detail
