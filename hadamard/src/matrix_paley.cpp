// Sylvester, Paley I and II, and Kronecker products.
#include <cstddef>

#include "matrix_build.hpp"

namespace lowp::hadamard::detail {
namespace {

// Jacobsthal-bordered conference-type core: c[i][j] for i, j in 0..q, with row/column 0 the
// point at infinity: c[0][0] = 0, c[0][j] = 1, c[i][0] = first_col, c[i][j] = chi(a_i - a_j).
std::vector<int> bordered_jacobsthal(int q, int first_col) {
  const GaloisField f(q);
  const std::vector<std::int8_t> chi = f.quadratic_character();
  const int m = q + 1;
  std::vector<int> c(static_cast<std::size_t>(m) * m, 0);
  for (int j = 1; j < m; ++j) c[static_cast<std::size_t>(j)] = 1;
  for (int i = 1; i < m; ++i) {
    c[static_cast<std::size_t>(i) * m] = first_col;
    for (int j = 1; j < m; ++j)
      c[static_cast<std::size_t>(i) * m + j] = chi[static_cast<std::size_t>(f.sub(i - 1, j - 1))];
  }
  return c;
}

}  // namespace

Matrix sylvester(int m) {
  Matrix h{1};
  const Matrix h2{1, 1, 1, -1};
  for (int k = 1; k < m; k *= 2) h = kronecker(h2, 2, h, k);
  return h;
}

// H = I + S with S = [[0, 1^T], [-1, Q]] skew (Q the Jacobsthal matrix, chi(-1) = -1): S S^T =
// q I gives H H^T = (q + 1) I.
Matrix paley1(int q) {
  const int m = q + 1;
  const std::vector<int> s = bordered_jacobsthal(q, -1);
  Matrix h(s.size());
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      const auto at = static_cast<std::size_t>(i) * m + j;
      h[at] = static_cast<std::int8_t>(s[at] + (i == j ? 1 : 0));
    }
  return h;
}

// C = [[0, 1^T], [1, Q]] is a symmetric conference matrix (C^2 = q I, chi(-1) = 1); H replaces
// each +-1 of C by +-[[1, 1], [1, -1]] and each 0 by [[1, -1], [-1, -1]].
Matrix paley2(int q) {
  const int c_order = q + 1, m = 2 * c_order;
  const std::vector<int> c = bordered_jacobsthal(q, 1);
  static constexpr int kOne[2][2] = {{1, 1}, {1, -1}}, kZero[2][2] = {{1, -1}, {-1, -1}};
  Matrix h(static_cast<std::size_t>(m) * m);
  for (int i = 0; i < c_order; ++i)
    for (int j = 0; j < c_order; ++j) {
      const int e = c[static_cast<std::size_t>(i) * c_order + j];
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b)
          h[static_cast<std::size_t>(2 * i + a) * m + (2 * j + b)] =
              static_cast<std::int8_t>(e == 0 ? kZero[a][b] : e * kOne[a][b]);
    }
  return h;
}

// (A (x) B)[(i, t), (j, u)] = A[i][j] * B[t][u], rows and columns indexed i*mb + t.
Matrix kronecker(const Matrix& a, int ma, const Matrix& b, int mb) {
  const int m = ma * mb;
  Matrix h(static_cast<std::size_t>(m) * m);
  for (int i = 0; i < ma; ++i)
    for (int t = 0; t < mb; ++t)
      for (int j = 0; j < ma; ++j)
        for (int u = 0; u < mb; ++u)
          h[static_cast<std::size_t>(i * mb + t) * m + (j * mb + u)] = static_cast<std::int8_t>(
              a[static_cast<std::size_t>(i) * ma + j] * b[static_cast<std::size_t>(t) * mb + u]);
  return h;
}

}  // namespace lowp::hadamard::detail
