// Explicit Hadamard matrices H_m: entries +-1 with H H^T = m I, built by lowp's own code from
// published constructions:
//   - Sylvester: H_1 = [1], H_2k = H_2 (x) H_k (the order fwht.hpp uses for powers of two);
//   - Paley I:  order q+1 for a prime power q = 3 (mod 4), over GF(q);
//   - Paley II: order 2(q+1) for a prime power q = 1 (mod 4), over GF(q);
//   - Goethals-Seidel: order 4v from four circulant +-1 sequences of length v whose periodic
//     autocorrelations sum to zero (supplementary difference sets; v = 39 and 43, where no
//     Paley construction exists, found by find_supplementary_difference_sets below);
//   - Kronecker products H_a (x) H_b of the above.
// Matrices are row-major m*m int8, built once per order and cached for the process lifetime
// (thread-safe), so the returned span never dangles.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lowp::hadamard {

// Largest order hadamard_matrix() builds explicitly (m*m bytes).
inline constexpr int kMaxExplicitOrder = 4096;

// Whether lowp can build a Hadamard matrix of order m (1 <= m <= kMaxExplicitOrder).
bool has_hadamard_matrix(int m);

// H_m, row-major (entry (i, j) at [i*m + j]). Throws lowp::Error naming m if lowp has no
// construction for m (m not 1, 2 or a multiple of 4, or no known construction implemented).
std::span<const std::int8_t> hadamard_matrix(int m);

// How H_m is built, e.g. "Paley I over GF(27)" or "H_2 (x) H_20". Throws like hadamard_matrix.
std::string hadamard_construction(int m);

// The non-power-of-two orders the Kronecker transform (transform.hpp) uses, ascending:
// 12, 20, 28, 36, 40, 44, 52, 60, 76, 108, 140, 156, 172 and, for every other odd o >= 3, the
// smallest constructible o*2^j (j >= 2) up to kMaxKroneckerOrder.
inline constexpr int kMaxKroneckerOrder = 1024;
std::span<const int> supported_orders();

// The generator of the Goethals-Seidel data: searches four +-1 sequences of length v (odd,
// 3 <= v <= 63), each constant on the orbits of multiplication by the powers of `multiplier`
// in Z_v, with nonnegative sums, whose periodic autocorrelations sum to 0 at every nonzero
// shift. Deterministic: returns the first solution of a fixed enumeration order, or an empty
// array of vectors if there is none with that symmetry. Takes about half a second for v = 43.
std::array<std::vector<std::int8_t>, 4> find_supplementary_difference_sets(int v, int multiplier);

}  // namespace lowp::hadamard
