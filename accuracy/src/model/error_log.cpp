// TensorError and ErrorLog: the error each quantization point of the forward pass introduced.
#include "model/error_log.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

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

}  // namespace lowp::accuracy
