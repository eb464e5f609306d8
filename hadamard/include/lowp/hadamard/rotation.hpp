// Orthonormal rotations for rotate-then-quantize (QuaRot, SpinQuant, Quartet style).
//
// Convention: data are row vectors. A batch X is `rows` x n, row-major, row r at x + r*stride;
// apply() computes X <- X R for an n x n orthonormal R, i.e. each row x becomes x R. A linear
// layer y = x W^T (W: out_features x n, row-major) keeps its output when both sides are
// rotated: (X R)(W R)^T = X R R^T W^T = X W^T, so fold_into_weight(W) (W <- W R) can be done
// offline and apply(X) online. apply_inverse() computes X <- X R^T, undoing apply().
//
// The rotations, with s = orthonormal_scale(n) = 1/sqrt(n) in float and H = H_m (x) H_{2^k}
// the Kronecker Hadamard matrix of transform.hpp (Sylvester's H_n when n is a power of two):
//   none            R = I
//   hadamard        R = s H^T              (x R = s H x^T: the transform of each row)
//   randomized      R = s D H^T            (x R = s H D x^T: signs first, then the transform)
//                   D = diag(d_i), d_i = -1 if bit 31 of random_bits(rng_key(seed), i) is set,
//                   else +1 (lowp/numerics/rng.hpp): the H*D form of QuaRot and
//                   TransformerEngine (Quartet's backward applies its signs after the
//                   transform: quant's linear recipes), reproducible from (seed, n) alone
//   block_diagonal  R = s_b diag(H_b, ..., H_b), s_b = 1/sqrt(b): n/b independent Sylvester
//                   blocks of b = block elements (b a power of two dividing n; 16..128 are the
//                   Quartet/QuEST and MX-aligned sizes); symmetric, so R^T = R
// R R^T = s^2 n I, which equals I up to the rounding of s (relative 2^-24), so everything
// above holds to float32 rounding. hadamard and randomized need kronecker_order(n) != 0;
// block_diagonal works for any n with a power-of-two factor.
//
// Bad input (lowp::Error, one line naming the value): size 0, stride < size, a size without
// a Hadamard transform, a block that is not a power of two dividing size, a null pointer with
// rows > 0. NaN/Inf propagate within their row (block_diagonal: within their block).
// Results are bitwise identical at any thread count and on any CPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace lowp::hadamard {

enum class RotationKind { none, hadamard, randomized, block_diagonal };

struct Rotation {
  RotationKind kind = RotationKind::none;
  std::size_t size = 0;    // n: the row length it applies to
  std::size_t block = 0;   // block_diagonal only
  std::uint64_t seed = 0;  // randomized only

  // Throws lowp::Error if this rotation cannot be applied (see above).
  void validate() const;
  // e.g. "randomized n=11008 (H_172 x H_64) seed=7", "block_diagonal n=4096 b=32".
  std::string describe() const;

  void apply(float* x, std::size_t rows, std::size_t stride) const;          // X <- X R
  void apply_inverse(float* x, std::size_t rows, std::size_t stride) const;  // X <- X R^T
  // W <- W R for a weight W (out_features x size, row-major, row stride `stride`).
  void fold_into_weight(float* w, std::size_t out_features, std::size_t stride) const;
};

}  // namespace lowp::hadamard
