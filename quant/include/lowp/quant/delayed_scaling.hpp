// Delayed scaling (TransformerEngine's DelayedScaling recipe): the per-tensor scale of a step
// comes from the amax history of earlier steps, so quantizing needs no extra pass over the
// data first.
//
// Per step a layer calls scale() (the multiplier s for this step: codes = cast(x * s), value
// code / s), quantizes with it, then record()s the amax it measured in that same pass;
// quantize_delayed / fake_quant_delayed below do the three at once. After record(amax):
//   history: amax pushed in front (newest first), the oldest dropped past `history_len`;
//   a = max(history) (AmaxReduce::max) or history[0] (AmaxReduce::most_recent);
//   s = (fmt_max / a) / 2^margin in float32, except that s is kept unchanged when a is 0 or
//   not finite (TE: torch.where(amax > 0, sf, scale); torch.where(isfinite(amax), sf, scale)).
// Before the first record() s = 1. An amax that is NaN or Inf is stored as is: under `max` it
// holds the scale until it leaves the history.
#pragma once
#include <cmath>
#include <cstddef>
#include <vector>

#include "lowp/formats/format.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::quant {

enum class AmaxReduce { max, most_recent };

struct DelayedScalingConfig {
  std::size_t history_len = 1024;  // TE's amax_history_len default
  AmaxReduce reduce = AmaxReduce::max;
  int margin = 0;
};

class DelayedScaling {
 public:
  // Throws lowp::Error when history_len is 0 or fmt_max not positive and finite.
  DelayedScaling(float fmt_max, DelayedScalingConfig config = {});
  explicit DelayedScaling(const Format& format, DelayedScalingConfig config = {});

  float scale() const noexcept { return scale_; }
  void record(float amax);
  // Several quantizations forming one step (micro-batches, data-parallel ranks): while
  // deferred, record() only keeps the largest amax it is given (a NaN wins) and the scale
  // stays; take_pending() returns that value (-inf when nothing was recorded) and clears it;
  // commit() then records one amax for the step as record() does undeferred.
  void defer(bool on) noexcept { deferred_ = on; }
  float take_pending() noexcept;
  void commit(float amax);
  const std::vector<float>& history() const noexcept { return history_; }  // newest first
  // Puts back a state saved from history() and scale() (checkpoints); lowp::Error when the
  // history is longer than history_len or the scale not positive and finite.
  void restore(std::vector<float> history, float scale);
  const DelayedScalingConfig& config() const noexcept { return config_; }
  float fmt_max() const noexcept { return fmt_max_; }

 private:
  float fmt_max_;
  DelayedScalingConfig config_;
  std::vector<float> history_;
  float scale_ = 1.0f;
  bool deferred_ = false;
  float pending_ = -INFINITY;
};

// One step: quantize x per tensor with state.scale(), then state.record(amax of x).
// `spec` must be per tensor with rule amax, absmax_int (s as is) or amax_pow2 (s rounded
// down to a power of two); lowp::Error otherwise.
QuantizedTensor quantize_delayed(const QuantSpec& spec, const float* x, std::size_t rows, std::size_t cols,
                                 DelayedScaling& state);
FakeQuantReport fake_quant_delayed(const QuantSpec& spec, float* x, std::size_t rows, std::size_t cols,
                                   DelayedScaling& state);

}  // namespace lowp::quant
