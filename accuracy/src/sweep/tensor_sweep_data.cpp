// The tensor sweep's built-in data: Gaussian, Laplace, Student-t (nu = 3) and LLM-like
// activations, each element a function of (seed, distribution, index) only.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "lowp/accuracy/tensor_sweep.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"

namespace lowp::accuracy {
namespace {

constexpr Distribution kDistributions[] = {Distribution::gaussian, Distribution::laplace, Distribution::student_t3,
                                           Distribution::llm_activations};
// Words of random bits each element may draw: Student-t needs four normals, two words each.
constexpr std::uint64_t kWordsPerElement = 8;
constexpr double kOutlierGain = 100.0;

// A uniform in (0, 1), never 0 or 1, so that log() is finite.
double uniform(RngKey key, std::uint64_t index) {
  return (static_cast<double>(random_bits(key, index)) + 0.5) * 0x1.0p-32;
}

// Box-Muller from words `first` and `first + 1`.
double normal(RngKey key, std::uint64_t first) {
  const double u1 = uniform(key, first), u2 = uniform(key, first + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double sample(Distribution d, RngKey key, std::uint64_t i) {
  const std::uint64_t w = i * kWordsPerElement;
  switch (d) {
    case Distribution::gaussian:
    case Distribution::llm_activations: return normal(key, w);
    case Distribution::laplace: {  // inverse CDF, scale 1/sqrt(2) for unit variance
      const double u = uniform(key, w) - 0.5;
      return -std::copysign(std::numbers::sqrt2 / 2, u) * std::log(1.0 - 2.0 * std::fabs(u));
    }
    case Distribution::student_t3: {  // Z / sqrt(chi^2_3 / 3)
      const double z = normal(key, w);
      double chi2 = 0;
      for (std::uint64_t k = 1; k <= 3; ++k) chi2 += std::pow(normal(key, w + 2 * k), 2);
      return z / std::sqrt(chi2 / 3.0);
    }
  }
  return 0;
}

// llm_activations shares the Gaussian's draws: the same data with the outlier channels scaled.
RngKey key_for(Distribution d, std::uint64_t seed) {
  if (d == Distribution::llm_activations) d = Distribution::gaussian;
  return rng_key(seed * 4 + static_cast<std::uint64_t>(d));
}

}  // namespace

std::span<const Distribution> all_distributions() { return kDistributions; }

std::string_view distribution_name(Distribution d) {
  switch (d) {
    case Distribution::gaussian: return "gaussian";
    case Distribution::laplace: return "laplace";
    case Distribution::student_t3: return "student_t3";
    case Distribution::llm_activations: return "llm_activations";
  }
  return "?";
}

Distribution parse_distribution(std::string_view name) {
  std::string names;
  for (auto d : kDistributions) {
    if (distribution_name(d) == name) return d;
    names += (names.empty() ? "" : ", ") + std::string(distribution_name(d));
  }
  throw Error("unknown distribution '" + std::string(name) + "'; valid names: " + names);
}

std::vector<std::size_t> outlier_channels(std::size_t cols, std::uint64_t seed) {
  // One channel in 512 (8 of 4096), at least one: LLM.int8()'s few outlier features.
  const std::size_t count = std::min(cols, std::max<std::size_t>(1, cols / 512));
  const RngKey key = rng_key(~seed);
  std::vector<std::size_t> ch;
  for (std::uint64_t k = 0; ch.size() < count; ++k) {
    const std::size_t c = random_bits(key, k) % cols;
    if (std::find(ch.begin(), ch.end(), c) == ch.end()) ch.push_back(c);
  }
  std::sort(ch.begin(), ch.end());
  return ch;
}

std::vector<float> generate_distribution(Distribution d, std::size_t rows, std::size_t cols, std::uint64_t seed) {
  if (rows == 0 || cols == 0)
    throw Error("distribution " + std::string(distribution_name(d)) + ": empty shape " + std::to_string(rows) + " x " +
                std::to_string(cols));
  const RngKey key = key_for(d, seed);
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(sample(d, key, i));
  if (d == Distribution::llm_activations)
    for (std::size_t c : outlier_channels(cols, seed))
      for (std::size_t r = 0; r < rows; ++r) x[r * cols + c] = static_cast<float>(kOutlierGain * x[r * cols + c]);
  return x;
}

}  // namespace lowp::accuracy
