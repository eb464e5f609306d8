// PrefixCache: the base's residual streams at the layers a rank's recipes resume from.
#include "sweep/prefix_cache.hpp"

#include <algorithm>
#include <optional>

#include "lowp/accuracy/memory.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {

bool resumes(const SweepJob& job, std::size_t i) {
  // A calibrated base (weights or static scales) is left out: its calibration is the recipe's
  // own, run per recipe. An identity recipe checks every tensor for NaN/Inf, the layers before
  // its own too.
  return job.prefix_base && job.prefix_base->calibrate.method == CalibMethod::none &&
         !job.prefix_base->static_scales() && i < job.resume.size() &&
         job.resume[i] > 0 && !job.recipes[i].is_identity();
}

PrefixCache::PrefixCache(const SweepJob& job, std::size_t begin, std::size_t end) {
  if (!job.prefix_base || begin >= end) return;
  const std::size_t runs = job.runs(), first_recipe = job.base ? 0 : 1;
  const Windows win = windows_for(job.model, job.tokens, job.opt);
  double evaluation = 0;  // the most any of them needs, beside which the cache lives
  for (std::size_t u = begin; u < end; ++u) {
    const std::size_t w = u / runs, run = u % runs;
    if (run < first_recipe || !resumes(job, run - first_recipe)) continue;
    const Recipe& r = job.recipes[run - first_recipe];
    windows_[w].layers.insert(job.resume[run - first_recipe]);
    evaluation = std::max(evaluation, evaluation_bytes(job.model, r, win.n, win.ctx, job.opt));
  }
  if (windows_.empty()) return;
  // Within the memory budget, or no reuse.
  double bytes = evaluation;
  for (auto& [w, e] : windows_) {
    e.size = win.length(w) * static_cast<std::size_t>(job.model.config.dim);
    bytes += 4.0 * static_cast<double>(e.layers.size() * e.size);
  }
  if (bytes > static_cast<double>(max_memory())) {
    windows_.clear();
    return;
  }
  reference_is_base_ = !job.base && job.prefix_base->is_identity();
}

ResidualTap PrefixCache::tap(std::size_t w) {
  const auto it = windows_.find(w);
  if (it == windows_.end()) return {};
  Entry* e = &it->second;
  e->x.clear();
  return [e](std::size_t l, const float* x) {
    if (e->layers.contains(l)) e->x[l].assign(x, x + e->size);
  };
}

void PrefixCache::fill(const SweepJob& job) {
  std::vector<std::size_t> missing;
  for (const auto& [w, e] : windows_)
    if (e.x.size() != e.layers.size()) missing.push_back(w);
  if (missing.empty()) return;
  try {
    WindowEvaluator ev(job.model, job.tokens, *job.prefix_base, job.opt);
    for (const std::size_t w : missing) {
      try {
        EvalRun r;
        windows_.at(w).errors = ev.run(w, r, nullptr, tap(w));
      } catch (const Error&) {
        windows_.at(w).x.clear();
      }
    }
  } catch (const Error&) {  // the base's preparation
    for (const std::size_t w : missing) windows_.at(w).x.clear();
  }
}

std::optional<WindowPrefix> PrefixCache::find(const SweepJob& job, std::size_t i, std::size_t w) const {
  if (!resumes(job, i)) return std::nullopt;
  const auto it = windows_.find(w);
  if (it == windows_.end() || it->second.x.size() != it->second.layers.size()) return std::nullopt;
  WindowPrefix p;
  p.layer = job.resume[i];
  p.x = it->second.x.at(p.layer);
  for (const TensorError& e : it->second.errors)
    if (e.layer >= 0 && static_cast<std::size_t>(e.layer) < p.layer) p.errors.push_back(e);
  return p;
}

}  // namespace lowp::accuracy::detail
