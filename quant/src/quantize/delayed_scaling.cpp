// Delayed scaling: the amax history, its reduction, and the per-step quantize helpers.
#include "lowp/quant/delayed_scaling.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/scale_rules.hpp"
#include "quantize_detail.hpp"

namespace lowp::quant {

DelayedScaling::DelayedScaling(float fmt_max, DelayedScalingConfig config) : fmt_max_(fmt_max), config_(config) {
  if (config.history_len == 0) throw Error("DelayedScaling: amax history length 0 (need at least 1)");
  if (!(fmt_max > 0) || !std::isfinite(fmt_max))
    throw Error("DelayedScaling: format maximum " + std::to_string(fmt_max) + " is not positive and finite");
  history_.reserve(config.history_len);
}

DelayedScaling::DelayedScaling(const Format& format, DelayedScalingConfig config)
    : DelayedScaling(format_max(format), config) {}

void DelayedScaling::record(float amax) {
  if (deferred_) {
    if (std::isnan(amax) || amax > pending_) pending_ = std::isnan(pending_) ? pending_ : amax;
    return;
  }
  commit(amax);
}

float DelayedScaling::take_pending() noexcept {
  const float p = pending_;
  pending_ = -INFINITY;
  return p;
}

void DelayedScaling::commit(float amax) {
  if (history_.size() == config_.history_len) history_.pop_back();
  history_.insert(history_.begin(), amax);
  float a = history_.front();
  if (config_.reduce == AmaxReduce::max) {
    // Any NaN in the window makes the reduction NaN (as torch.max), which keeps the old scale.
    for (const float h : history_)
      if (std::isnan(h) || h > a) a = std::isnan(a) ? a : h;
  }
  if (!(a > 0) || !std::isfinite(a)) return;
  const float s = fmt_max_ / a / std::ldexp(1.0f, config_.margin);
  if (s > 0 && std::isfinite(s)) scale_ = s;
}

void DelayedScaling::restore(std::vector<float> history, float scale) {
  if (history.size() > config_.history_len)
    throw Error("DelayedScaling: restoring " + std::to_string(history.size()) + " amax values into a history of " +
                std::to_string(config_.history_len));
  if (!(scale > 0) || !std::isfinite(scale))
    throw Error("DelayedScaling: restored scale " + std::to_string(scale) + " is not positive and finite");
  history_ = std::move(history);
  scale_ = scale;
}

namespace {
float step_multiplier(const QuantSpec& spec, const DelayedScaling& state) {
  const float s = state.scale();
  if (spec.rule != ScaleRule::amax_pow2) return s;
  int e = 0;
  std::frexp(s, &e);
  return std::ldexp(1.0f, e - 1);
}
}  // namespace

QuantizedTensor quantize_delayed(const QuantSpec& spec, const float* x, std::size_t rows, std::size_t cols,
                                 DelayedScaling& state) {
  float amax = 0;
  QuantizedTensor q = detail::quantize_with_multiplier(spec, x, rows, cols, step_multiplier(spec, state), amax);
  state.record(amax);
  return q;
}

FakeQuantReport fake_quant_delayed(const QuantSpec& spec, float* x, std::size_t rows, std::size_t cols,
                                   DelayedScaling& state) {
  float amax = 0;
  const FakeQuantReport r =
      detail::fake_quant_with_multiplier(spec, x, rows, cols, step_multiplier(spec, state), amax);
  state.record(amax);
  return r;
}

}  // namespace lowp::quant
