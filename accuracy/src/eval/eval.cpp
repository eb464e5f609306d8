// evaluate(): windows of ctx tokens through the forward pass, scored as llama.cpp's perplexity
// tool does (each window from position 0, the second half of it scored) or every position.
#include "lowp/accuracy/eval.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include <omp.h>

#include "lowp/accuracy/memory.hpp"
#include "model/llama.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {

double TensorError::sqnr_db() const {
  if (noise == 0) return signal == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

namespace detail {

void ErrorLog::add(int layer, const std::string& point, const float* before, const float* after, std::size_t n) {
  TensorError e;
  e.point = point;
  e.layer = layer;
  e.count = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(after[i]) || !std::isfinite(before[i])) {
      e.nonfinite += !std::isfinite(after[i]);
      continue;
    }
    const double x = before[i], d = static_cast<double>(after[i]) - x;
    e.signal += x * x;
    e.noise += d * d;
  }
  add(e);
}

void ErrorLog::add(const TensorError& e) {
  const auto [it, fresh] = index_.try_emplace({e.layer, e.point}, entries_.size());
  if (fresh) {
    entries_.push_back(e);
    return;
  }
  TensorError& t = entries_[it->second];
  t.signal += e.signal;
  t.noise += e.noise;
  t.count += e.count;
  t.nonfinite += e.nonfinite;
}

std::vector<TensorError> ErrorLog::entries() const {
  const auto rank = [](int layer) { return layer < 0 ? std::numeric_limits<int>::max() : layer; };
  // Stable by the first-met index (std::stable_sort's libstdc++ 12 buffer is deprecated for clang 19).
  std::vector<std::size_t> order(entries_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(rank(entries_[a].layer), a) < std::pair(rank(entries_[b].layer), b);
  });
  std::vector<TensorError> v;
  for (const std::size_t i : order) v.push_back(entries_[i]);
  return v;
}

}  // namespace detail

namespace {

// Appends the log-softmax of `logits` (in double, stored as float) and returns the NLL of
// `target`; NaN when a logit is not finite.
double score_row(const float* logits, std::size_t vocab, int target, std::vector<float>& log_probs) {
  bool finite = true;
  double mx = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < vocab; ++j) {
    finite = finite && std::isfinite(logits[j]);
    mx = std::max(mx, static_cast<double>(logits[j]));
  }
  double sum = 0;
  for (std::size_t j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(logits[j]) - mx);
  const double lse = mx + std::log(sum);
  for (std::size_t j = 0; j < vocab; ++j) log_probs.push_back(static_cast<float>(static_cast<double>(logits[j]) - lse));
  return finite ? lse - static_cast<double>(logits[static_cast<std::size_t>(target)])
                : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

EvalRun evaluate(const LlamaModel& model, std::span<const int> tokens, const Recipe& recipe, const EvalOptions& opt) {
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
  const std::size_t n = tokens.size(), vocab = static_cast<std::size_t>(c.vocab_size);
  // A context past the model's seq_len is allowed (RoPE goes on); windows never exceed the tokens.
  const std::size_t ctx = std::min(n, opt.ctx ? static_cast<std::size_t>(opt.ctx) : static_cast<std::size_t>(c.seq_len));
  const int threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  // The quantization and Hadamard kernels size their OpenMP teams from this task's
  // nthreads-var: set it for the evaluation so --threads bounds them too.
  struct ThreadLimit {
    int saved = omp_get_max_threads();
    explicit ThreadLimit(int n) { omp_set_num_threads(n); }
    ~ThreadLimit() { omp_set_num_threads(saved); }
  } limit(threads);

  {
    // What the run itself allocates, checked before any of it is: prepared weight copies,
    // the window's activations and attention scores, the kept log-probabilities and logits.
    const double w = weight_bytes(c), T = static_cast<double>(std::min(ctx, n)), v = static_cast<double>(vocab);
    const double dim = c.dim, kv = c.kv_dim(), hidden = c.hidden_dim;
    double need = w * ((model.mapped ? 0 : 1) + (recipe.is_identity() ? 0 : 1) + (recipe.quarot ? 1 : 0));
    need += 4 * T * (8 * dim + 4 * kv + 4 * hidden + 2 * T + v + static_cast<double>(c.head_dim()));
    need += 4 * static_cast<double>(n) * v * (opt.keep_logits ? 2 : 1);
    check_memory(need, "evaluate: " + std::to_string(n) + " tokens in windows of " + std::to_string(std::min(ctx, n)) +
                           " over vocab_size " + std::to_string(c.vocab_size) + " and the model's weights");
  }
  detail::PreparedModel pm = detail::prepare(model, recipe, std::min(ctx, n));
  pm.check_finite = recipe.is_identity();
  detail::ErrorLog log;
  for (const auto& e : pm.weight_errors) log.add(e);

  EvalRun run;
  run.vocab = vocab;
  if (opt.keep_logits) run.logits.reserve(n * vocab);
  std::vector<float> logits(ctx * vocab);
  for (std::size_t start = 0; start < n; start += ctx) {
    const std::size_t T = std::min(ctx, n - start);
    // Row t predicts token t + 1 of the window; llama.cpp scores the second half only.
    const std::size_t first = opt.score_all ? 0 : T / 2;
    std::span<const int> window = tokens.subspan(start, T);
    std::vector<int> with_bos;
    if (opt.bos >= 0) {  // llama.cpp's perplexity: the window's first input is BOS (its targets are unchanged)
      with_bos.assign(window.begin(), window.end());
      with_bos[0] = opt.bos;
      window = with_bos;
    }
    detail::forward_window(pm, window, logits.data(), log, threads, opt.keep_logits ? 0 : first);
    if (opt.keep_logits) run.logits.insert(run.logits.end(), logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(T * vocab));
    for (std::size_t t = first; t + 1 < T; ++t) {
      const int target = tokens[start + t + 1];
      const double nll = score_row(logits.data() + t * vocab, vocab, target, run.log_probs);
      run.targets.push_back(target);
      if (std::isnan(nll))
        ++run.nonfinite;
      else
        run.nll_sum += nll;
    }
    if (opt.progress) opt.progress(start + T, n);
  }
  run.tensor_errors = log.entries();
  return run;
}

}  // namespace lowp::accuracy
