// The tensor-level sweep, `lowp sweep` without a model: built-in data distributions, each
// quantized under every format x scaling granularity x rotation, with the error it leaves.
//
// A pass rotates each row (the reduction dimension) by R, fake-quantizes, rotates back by R^T
// and measures against the original data, so every figure is in the data's own basis:
//   SQNR dB = 10 log10(sum x^2 / sum (x - x')^2), MSE = mean (x - x')^2, max |x - x'|,
// summed in double. Deterministic from the seed, at any thread count.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowp::accuracy {

enum class Distribution {
  gaussian,         // N(0, 1)
  laplace,          // Laplace(0, b = 1/sqrt(2)): unit variance, heavier tails
  student_t3,       // Student-t with nu = 3: heavy tails (variance 3)
  llm_activations,  // N(0, 1) with a few fixed channels (columns) 100x larger, as in LLM activations
};
std::span<const Distribution> all_distributions();
std::string_view distribution_name(Distribution d);  // "gaussian", "laplace", "student_t3", "llm_activations"
// Throws lowp::Error listing the names.
Distribution parse_distribution(std::string_view name);

// rows x cols row-major values; element i uses the counter-based random bits for index i of
// `seed` (lowp/numerics/rng.hpp), so the data do not depend on how they are generated.
std::vector<float> generate_distribution(Distribution d, std::size_t rows, std::size_t cols, std::uint64_t seed);
// The outlier channels of llm_activations for `cols` columns (sorted).
std::vector<std::size_t> outlier_channels(std::size_t cols, std::uint64_t seed);

enum class SweepRotation {
  none,
  hadamard,  // randomized Hadamard over the whole row (R = D H / sqrt(n)), seeded
  block32,   // block-diagonal Hadamard, 32 x 32 blocks (the MX block)
};
std::span<const SweepRotation> all_sweep_rotations();
std::string_view rotation_name(SweepRotation r);  // "none", "hadamard", "block32"
SweepRotation parse_sweep_rotation(std::string_view name);

// The default passes, as quantization spec texts (lowp/quant/quantize.hpp's syntax): every
// preset format with the granularities that make sense for it (tensor, row, block 32 with a
// float32 scale, MX, NVFP4, ...).
std::vector<std::string> default_tensor_sweep_specs();

// The most values (rows x cols) one tensor of the sweep may hold.
inline constexpr std::size_t max_tensor_sweep_values = std::size_t{1} << 25;

struct TensorSweepOptions {
  std::size_t rows = 256, cols = 4096;
  std::uint64_t seed = 1;
  std::vector<std::string> specs;                // empty: default_tensor_sweep_specs()
  std::vector<Distribution> distributions;       // empty: all
  std::vector<SweepRotation> rotations;          // empty: all
  int threads = 0;                               // OpenMP threads (0: all); results do not depend on it
  // Called after each pass with (passes done, passes total).
  std::function<void(std::size_t, std::size_t)> progress;
};

struct TensorSweepRow {
  std::string distribution, spec;     // spec: the text as given, e.g. "mxfp4", "e4m3:row"
  std::string format, granularity, scale;  // canonical format name, "tensor"/"row"/"b32"..., scale rule
  std::string rotation;
  double bits_per_element = 0;        // scales included (lowp::quant::bits_per_element)
  double sqnr_db = 0, mse = 0, max_abs_error = 0;
  std::size_t nonfinite = 0;          // outputs that are NaN or Inf
};

// One row per distribution x spec x rotation, in that nesting order. Throws lowp::Error for a
// bad spec or a shape the spec or the rotation cannot take (naming them), before any pass runs.
// Under mpirun every rank calls it and runs a share of the (distribution, spec) pairs; rank 0
// returns every row (the same as one process), the other ranks none. `progress` counts the
// calling rank's own passes.
std::vector<TensorSweepRow> run_tensor_sweep(const TensorSweepOptions& opt);

}  // namespace lowp::accuracy
