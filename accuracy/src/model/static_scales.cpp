// act.scale / attn.scale = static (docs/recipes.md, "Static scales"): each static point's
// tensor-level amax, or a percentile of |x|, over the calibration text, measured on the
// recipe's own forward pass with dynamic scales (the cache of the results is
// model/calibration_cache.cpp, with weights.calibrate's).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/calibration_cache.hpp"
#include "model/llama.hpp"

namespace lowp::accuracy::detail {

bool static_point(const Recipe& r, const std::string& point, const quant::QuantSpec& s) {
  const bool act = point.starts_with("x.");
  const bool attn = point == "q" || point == "k" || point == "v" || point == "kv.k" || point == "kv.v";
  return ((act && r.act_scale.fixed) || (attn && r.attn_scale.fixed)) && quant::has_tensor_scale(s);
}

std::size_t static_scale_ctx(const LlamaModel& model, const CalibrationText& text) {
  return text.ctx > 0 ? static_cast<std::size_t>(text.ctx) : static_cast<std::size_t>(model.config.seq_len);
}

namespace {

// The nearest-rank percentile of |x| over the finite elements a point is handed: of N, the one
// of ascending rank ceil(p N / 100), i.e. the k-th largest with k = N - ceil(p N / 100) + 1
// (p = 100: the amax). k never decreases as N grows, so keeping the k largest for the most
// elements the calibration can hand the point is enough; they are pruned with nth_element when
// twice as many (and a piece) are held. The k-th largest value is the same whatever the order
// the elements came in.
class Percentile {
 public:
  Percentile(std::uint32_t p_e4, std::uint64_t most) : p_e4_(p_e4), keep_(largest_rank(std::max<std::uint64_t>(most, 1))) {}

  void add(const float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const float a = std::fabs(x[i]);
      if (!std::isfinite(a)) continue;
      ++n_;
      v_.push_back(a);
      if (v_.size() >= 2 * keep_ + 4096) {
        std::nth_element(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(keep_ - 1), v_.end(), std::greater<float>());
        v_.resize(keep_);
      }
    }
  }

  float value() {
    if (n_ == 0) return 0.0f;  // nothing finite: the rules' amax 0
    const auto k = static_cast<std::ptrdiff_t>(largest_rank(n_));
    std::nth_element(v_.begin(), v_.begin() + (k - 1), v_.end(), std::greater<float>());
    return v_[static_cast<std::size_t>(k - 1)];
  }

 private:
  std::uint64_t largest_rank(std::uint64_t n) const {
    const auto rank = static_cast<std::uint64_t>((static_cast<unsigned __int128>(p_e4_) * n + 999999) / 1000000);
    return n - rank + 1;  // rank >= 1: p > 0 and n >= 1
  }

  std::uint32_t p_e4_;
  std::uint64_t keep_, n_ = 0;
  std::vector<float> v_;
};

}  // namespace

std::map<std::pair<int, std::string>, float> compute_static_amax(const LlamaModel& model, const Recipe& recipe,
                                                                 const CalibrationText& text,
                                                                 const CalibratedWeights& weights, int threads) {
  const std::size_t T = calibration_window(model, text, static_scale_ctx(model, text));
  PreparedModel pm = prepare(model, recipe, T, &weights);
  const std::uint64_t tokens = text.tokens.size();
  std::map<std::pair<int, std::string>, Percentile> seen;
  pm.observe = [&](int l, const std::string& point, const float* x, std::size_t rows, std::size_t cols) {
    const ScaleSource& s = point.starts_with("x.") ? recipe.act_scale : recipe.attn_scale;
    seen.try_emplace({l, point}, s.percentile_e4, tokens * cols).first->second.add(x, rows * cols);
  };
  run_calibration_windows(pm, text, T, threads, true);
  std::map<std::pair<int, std::string>, float> out;
  for (auto& [key, p] : seen) out[key] = p.value();
  return out;
}

}  // namespace lowp::accuracy::detail

namespace lowp::accuracy {

std::map<std::string, float> static_scales(const LlamaModel& model, const Recipe& recipe, const CalibrationText& text,
                                           int threads) {
  validate(model);
  const detail::CalibratedWeights cw =
      detail::calibrate_weights(model, recipe, text, detail::static_scale_ctx(model, text), threads);
  std::map<std::string, float> out;
  for (const auto& [id, amax] : cw.static_amax) out[std::to_string(id.first) + "." + id.second] = amax;
  return out;
}

}  // namespace lowp::accuracy
