#include "lowp/accuracy/sample.hpp"

#include <cmath>
#include <vector>

#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"

namespace lowp::accuracy {

int sample_token(std::span<const float> logits, double temperature, std::uint64_t seed, std::uint64_t position) {
  const std::size_t n = logits.size();
  if (n == 0) throw Error("sample_token: no logits to sample from");
  std::size_t best = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  if (temperature <= 0) return static_cast<int>(best);
  // exp((l - max) / T): the largest term is 1, so z >= 1 and nothing overflows.
  std::vector<double> p(n);
  double z = 0;
  for (std::size_t i = 0; i < n; ++i) z += p[i] = std::exp((logits[i] - logits[best]) / temperature);
  const double u = (static_cast<double>(random_bits(rng_key(seed), position)) + 0.5) / 4294967296.0 * z;
  double acc = 0;
  for (std::size_t i = 0; i < n; ++i)
    if ((acc += p[i]) > u) return static_cast<int>(i);
  return static_cast<int>(n - 1);
}

}  // namespace lowp::accuracy
