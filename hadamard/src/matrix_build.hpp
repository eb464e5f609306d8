// Internal: the Hadamard matrix constructions behind matrix.hpp. Every builder returns a
// row-major +-1 matrix; correctness (H H^T = m I) is checked by the tests, not here.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace lowp::hadamard::detail {

using Matrix = std::vector<std::int8_t>;

// q = p^k with p prime and k >= 1, else {0, 0}.
struct PrimePower {
  int p = 0, k = 0;
};
PrimePower prime_power(int q);

// GF(q) for a prime power q: elements are the integers 0..q-1 read as base-p digit vectors
// (coefficients of 1, x, x^2, ... modulo a monic irreducible polynomial of degree k).
class GaloisField {
 public:
  explicit GaloisField(int q);  // q must be a prime power (checked by the caller)
  int order() const { return q_; }
  int sub(int a, int b) const;
  int mul(int a, int b) const;
  // chi[x] = 0 for x = 0, +1 for a nonzero square, -1 otherwise.
  std::vector<std::int8_t> quadratic_character() const;

 private:
  int q_, p_, k_;
  std::vector<int> modulus_;  // coefficients c_0..c_{k-1} of x^k = -(c_0 + c_1 x + ...)
};

Matrix sylvester(int m);  // m a power of two
Matrix paley1(int q);     // q = 3 (mod 4) prime power: order q + 1
Matrix paley2(int q);     // q = 1 (mod 4) prime power: order 2(q + 1)
Matrix kronecker(const Matrix& a, int ma, const Matrix& b, int mb);  // a (x) b

// Goethals-Seidel array from four +-1 sequences of length v (first rows of circulants A, B,
// C, D with A A^T + B B^T + C C^T + D D^T = 4v I): order 4v.
Matrix goethals_seidel(const std::array<std::vector<std::int8_t>, 4>& rows);

// The stored sequences for length v (from find_supplementary_difference_sets), or an empty
// array if none is stored.
std::array<std::vector<std::int8_t>, 4> stored_sequences(int v);

}  // namespace lowp::hadamard::detail
