// The Rotation value type: validation, and apply / apply_inverse / fold_into_weight on top of
// the Kronecker and block-diagonal transforms.
#include "lowp/hadamard/rotation.hpp"

#include <bit>
#include <string>
#include <vector>

#include "lowp/hadamard/transform.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "transform_kernels.hpp"

namespace lowp::hadamard {
namespace {

const char* kind_name(RotationKind k) {
  switch (k) {
    case RotationKind::none:
      return "none";
    case RotationKind::hadamard:
      return "hadamard";
    case RotationKind::randomized:
      return "randomized";
    case RotationKind::block_diagonal:
      return "block_diagonal";
  }
  return "?";
}

// The sign masks of D for (seed, n): bit 31 set where d_i = -1. The last one is kept per
// thread, so a rotation applied batch after batch computes them once.
const std::uint32_t* sign_masks(std::uint64_t seed, std::size_t n) {
  struct Cache {
    std::uint64_t seed = 0;
    std::vector<std::uint32_t> mask;
  };
  thread_local Cache c;
  if (c.mask.size() != n || c.seed != seed) {
    c.seed = seed;
    c.mask.resize(n);
    const RngKey key = rng_key(seed);
    for (std::size_t i = 0; i < n; ++i) c.mask[i] = random_bits(key, i) & 0x80000000u;
  }
  return c.mask.data();
}

void check_batch(const Rotation& r, const char* fn, const float* x, std::size_t rows,
                 std::size_t stride) {
  r.validate();
  if (stride < r.size)
    throw Error(std::string(fn) + ": row stride " + std::to_string(stride) +
                " is shorter than the rotation size n = " + std::to_string(r.size));
  if (rows > 0 && x == nullptr)
    throw Error(std::string(fn) + ": null data pointer for " + std::to_string(rows) + " rows");
}

void run(const Rotation& r, const char* fn, float* x, std::size_t rows, std::size_t stride,
         bool inverse) {
  check_batch(r, fn, x, rows, stride);
  if (rows == 0) return;
  const std::size_t n = r.size;
  switch (r.kind) {
    case RotationKind::none:
      return;
    case RotationKind::block_diagonal:
      block_hadamard_rows(x, rows, n, stride, r.block, orthonormal_scale(r.block));
      return;
    case RotationKind::hadamard:
      // x R = s H x^T; x R^T = s H^T x^T.
      detail::transform_rows(fn, best_isa(), x, rows, n, stride, orthonormal_scale(n), inverse,
                             nullptr, nullptr);
      return;
    case RotationKind::randomized: {
      // x R = s H (D x^T); x R^T = D (s H^T x^T).
      const std::uint32_t* d = sign_masks(r.seed, n);
      detail::transform_rows(fn, best_isa(), x, rows, n, stride, orthonormal_scale(n), inverse,
                             inverse ? nullptr : d, inverse ? d : nullptr);
      return;
    }
  }
}

}  // namespace

void Rotation::validate() const {
  const std::string what = std::string("rotation ") + kind_name(kind);
  if (kind != RotationKind::none && kind != RotationKind::hadamard &&
      kind != RotationKind::randomized && kind != RotationKind::block_diagonal)
    throw Error("rotation: unknown kind " + std::to_string(static_cast<int>(kind)));
  if (size == 0) throw Error(what + ": size n = 0");
  switch (kind) {
    case RotationKind::none:
      return;
    case RotationKind::block_diagonal:
      if (block == 0 || !std::has_single_bit(block) || size % block != 0)
        throw Error(what + ": block b = " + std::to_string(block) +
                    " is not a power of two dividing n = " + std::to_string(size));
      return;
    case RotationKind::hadamard:
    case RotationKind::randomized:
      if (kronecker_order(size) == 0) {
        const std::size_t b = largest_power_of_two_block(size);
        throw Error(what + ": no Hadamard transform of size n = " + std::to_string(size) +
                    (b > 1 ? " (use block_diagonal with block " + std::to_string(b) + ")"
                           : " (n is odd: no block-diagonal alternative either)"));
      }
      return;
  }
}

std::string Rotation::describe() const {
  std::string s = std::string(kind_name(kind)) + " n=" + std::to_string(size);
  if (kind == RotationKind::block_diagonal) s += " b=" + std::to_string(block);
  if (kind == RotationKind::hadamard || kind == RotationKind::randomized) {
    const std::size_t m = kronecker_order(size);
    if (m > 1) s += " (H_" + std::to_string(m) + " x H_" + std::to_string(size / m) + ")";
  }
  if (kind == RotationKind::randomized) s += " seed=" + std::to_string(seed);
  return s;
}

void Rotation::apply(float* x, std::size_t rows, std::size_t stride) const {
  run(*this, "Rotation::apply", x, rows, stride, false);
}

void Rotation::apply_inverse(float* x, std::size_t rows, std::size_t stride) const {
  run(*this, "Rotation::apply_inverse", x, rows, stride, true);
}

void Rotation::fold_into_weight(float* w, std::size_t out_features, std::size_t stride) const {
  run(*this, "Rotation::fold_into_weight", w, out_features, stride, false);  // W R, row by row
}

}  // namespace lowp::hadamard
