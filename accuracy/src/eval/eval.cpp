// evaluate(): windows of ctx tokens through the forward pass, scored as llama.cpp's perplexity
// tool does (each window from position 0, the second half of it scored) or every position.
#include "lowp/accuracy/eval.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

#include <omp.h>

#include "lowp/accuracy/memory.hpp"
#include "model/calibration_cache.hpp"
#include "eval/windows.hpp"
#include "model/llama.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {
namespace {

// The NLL of `target` under the softmax of `logits` (NaN when a logit is not finite), and the
// log-softmax (in double, stored as float) in `log_probs` unless it is null.
double score_row(const float* logits, std::size_t vocab, int target, float* log_probs) {
  bool finite = true;
  double mx = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < vocab; ++j) {
    finite = finite && std::isfinite(logits[j]);
    mx = std::max(mx, static_cast<double>(logits[j]));
  }
  double sum = 0;
  for (std::size_t j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(logits[j]) - mx);
  const double lse = mx + std::log(sum);
  if (log_probs)
    for (std::size_t j = 0; j < vocab; ++j) log_probs[j] = static_cast<float>(static_cast<double>(logits[j]) - lse);
  return finite ? lse - static_cast<double>(logits[static_cast<std::size_t>(target)])
                : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

namespace detail {

void score_window(const float* logits, std::span<const int> tokens, std::size_t first, std::size_t vocab, EvalRun& run,
                  bool keep_log_probs) {
  if (tokens.size() <= first + 1) return;
  const std::size_t rows = tokens.size() - 1 - first, base = run.log_probs.size();
  if (keep_log_probs) run.log_probs.resize(base + rows * vocab);
  float* out = keep_log_probs ? run.log_probs.data() + base : nullptr;
  std::vector<double> nll(rows);
#pragma omp parallel for schedule(static) if (rows * vocab >= (std::size_t{1} << 16))
  for (std::size_t i = 0; i < rows; ++i)
    nll[i] = score_row(logits + (first + i) * vocab, vocab, tokens[first + i + 1], out ? out + i * vocab : nullptr);
  for (std::size_t i = 0; i < rows; ++i) {
    run.targets.push_back(tokens[first + i + 1]);
    if (std::isnan(nll[i]))
      ++run.nonfinite;
    else
      run.nll_sum += nll[i];
  }
}

std::size_t Windows::scored(std::size_t w, bool score_all) const {
  const std::size_t T = length(w), first = score_all ? 0 : T / 2;
  return T > first + 1 ? T - 1 - first : 0;
}

Windows windows_for(const LlamaModel& model, std::span<const int> tokens, const EvalOptions& opt) {
  validate(model);
  const LlamaConfig& c = model.config;
  if (tokens.empty()) throw Error("evaluate: the token list is empty");
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size)
      throw Error("evaluate: token " + std::to_string(i) + " is id " + std::to_string(tokens[i]) +
                  ", outside the model's vocabulary [0, " + std::to_string(c.vocab_size) + ")");
  if (opt.ctx < 0) throw Error("evaluate: context " + std::to_string(opt.ctx) + " is negative");
  if (opt.ctx == 1) throw Error("evaluate: context 1 leaves nothing to predict; use at least 2");
  if (opt.bos >= c.vocab_size)
    throw Error("evaluate: BOS id " + std::to_string(opt.bos) + " is outside the model's vocabulary");
  const std::size_t n = tokens.size();
  // A context past the model's seq_len is allowed (RoPE goes on); windows never exceed the tokens.
  return {n, std::min(n, opt.ctx ? static_cast<std::size_t>(opt.ctx) : static_cast<std::size_t>(c.seq_len))};
}

double evaluation_bytes(const LlamaModel& model, const Recipe& recipe, std::size_t n, std::size_t ctx,
                        const EvalOptions& opt) {
  // What the run itself allocates, checked before any of it is: prepared weight copies,
  // the window's activations and attention scores, the kept log-probabilities and logits.
  const LlamaConfig& c = model.config;
  const double w = weight_bytes(c), T = static_cast<double>(ctx), v = c.vocab_size;
  const double dim = c.dim, kv = c.kv_dim(), hidden = c.hidden_dim;
  double need = w * ((model.mapped ? 0 : 1) + (recipe.is_identity() ? 0 : 1) + (recipe.quarot ? 1 : 0));
  // (The block's K and V rows beside the window's cache, and its second norm's rows: dim + 2 kv.)
  need += 4 * T * (9 * dim + 6 * kv + 4 * hidden + 2 * T + v + static_cast<double>(c.head_dim()));
  need += 4 * static_cast<double>(n) * v * ((opt.keep_logits ? 1 : 0) + (opt.keep_log_probs ? 1 : 0));
  return need;
}

WindowEvaluator::WindowEvaluator(const LlamaModel& model, std::span<const int> tokens, const Recipe& recipe,
                                 const EvalOptions& opt)
    : tokens_(tokens), opt_(opt), windows_(windows_for(model, tokens, opt)) {
  const LlamaConfig& c = model.config;
  const std::size_t n = windows_.n, ctx = windows_.ctx, vocab = static_cast<std::size_t>(c.vocab_size);
  threads_ = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  check_memory(evaluation_bytes(model, recipe, n, ctx, opt),
               "evaluate: " + std::to_string(n) + " tokens in windows of " + std::to_string(ctx) +
                   " over vocab_size " + std::to_string(c.vocab_size) + " and the model's weights");
  // The quantization and Hadamard kernels size their OpenMP teams from this task's
  // nthreads-var: set it for the evaluation so --threads bounds them too.
  saved_threads_ = omp_get_max_threads();
  omp_set_num_threads(threads_);
  try {
    std::optional<CalibratedWeights> calibrated;
    if (recipe.needs_calibration() && opt.calib)
      calibrated = calibrate_weights(model, recipe, *opt.calib, ctx, threads_);
    pm_ = prepare(model, recipe, ctx, calibrated ? &*calibrated : nullptr);
  } catch (...) {
    omp_set_num_threads(saved_threads_);
    throw;
  }
  pm_.check_finite = recipe.is_identity();
  logits_ = std::make_unique_for_overwrite<float[]>(ctx * vocab);
}

WindowEvaluator::~WindowEvaluator() { omp_set_num_threads(saved_threads_); }

WindowEvaluator::Rows WindowEvaluator::rows(std::size_t w) const {
  const std::size_t T = windows_.length(w);
  // Row t predicts token t + 1 of the window; llama.cpp scores the second half only.
  const std::size_t first = opt_.score_all ? 0 : T / 2;
  return {windows_.start(w), T, first, opt_.keep_logits ? 0 : first};
}

void WindowEvaluator::score(const Rows& r, EvalRun& run) const {
  const std::size_t vocab = static_cast<std::size_t>(pm_.cfg.vocab_size);
  run.vocab = vocab;
  if (opt_.keep_logits)
    run.logits.insert(run.logits.end(), logits_.get(), logits_.get() + r.T * vocab);
  score_window(logits_.get(), tokens_.subspan(r.start, r.T), r.first, vocab, run, opt_.keep_log_probs);
}

std::vector<TensorError> WindowEvaluator::run(std::size_t w, EvalRun& run, const WindowPrefix* from,
                                              const ResidualTap& tap) {
  const Rows r = rows(w);
  std::span<const int> window = tokens_.subspan(r.start, r.T);
  std::vector<int> with_bos;
  if (opt_.bos >= 0) {  // llama.cpp's perplexity: the window's first input is BOS (its targets are unchanged)
    with_bos.assign(window.begin(), window.end());
    with_bos[0] = opt_.bos;
    window = with_bos;
  }
  ErrorLog log;
  if (from) {
    for (const TensorError& e : from->errors) log.add(e);
    forward_window_from(pm_, from->layer, from->x, logits_.get(), log, threads_, r.first_logit);
  } else {
    forward_window(pm_, window, logits_.get(), log, threads_, r.first_logit, tap);
  }
  score(r, run);
  return log.entries();
}

std::vector<std::vector<TensorError>> WindowEvaluator::run_stacked(std::span<WindowEvaluator* const> evs,
                                                                   std::size_t w, std::span<EvalRun> runs,
                                                                   const WindowPrefix& from) {
  const Rows r = evs[0]->rows(w);
  std::vector<ErrorLog> logs(evs.size());
  std::vector<const PreparedModel*> pms;
  std::vector<float*> logits;  // each evaluator's own buffer
  for (std::size_t i = 0; i < evs.size(); ++i) {
    for (const TensorError& t : from.errors) logs[i].add(t);
    pms.push_back(&evs[i]->pm_);
    logits.push_back(evs[i]->logits_.get());
  }
  forward_stacked(pms, from.layer, from.x, logits, logs, evs[0]->threads_, r.first_logit);
  std::vector<std::vector<TensorError>> out;
  for (std::size_t i = 0; i < evs.size(); ++i) {
    evs[i]->score(r, runs[i]);
    out.push_back(logs[i].entries());
  }
  return out;
}

}  // namespace detail

EvalRun evaluate(const LlamaModel& model, std::span<const int> tokens, const Recipe& recipe, const EvalOptions& opt) {
  detail::WindowEvaluator ev(model, tokens, recipe, opt);
  // Each window's errors are summed on their own and then added in window order, as the model
  // sweep does when its windows are split across ranks.
  detail::ErrorLog log;
  for (const auto& e : ev.weight_errors()) log.add(e);
  EvalRun run;
  run.vocab = static_cast<std::size_t>(model.config.vocab_size);
  const detail::Windows& win = ev.windows();
  if (opt.keep_logits) run.logits.reserve(tokens.size() * run.vocab);
  if (opt.keep_log_probs) {  // one allocation, not a copy at each doubling
    std::size_t scored = 0;
    for (std::size_t w = 0; w < win.count(); ++w) scored += win.scored(w, opt.score_all);
    run.log_probs.reserve(scored * run.vocab);
  }
  for (std::size_t w = 0; w < win.count(); ++w) {
    for (const auto& e : ev.run(w, run)) log.add(e);
    if (opt.progress) opt.progress(win.start(w) + win.length(w), win.n);
  }
  run.tensor_errors = log.entries();
  return run;
}

}  // namespace lowp::accuracy
