// Prime powers and the finite fields GF(p^k) the Paley constructions need (e.g. GF(25),
// GF(27)): elements as base-p digit vectors, multiplication modulo a monic irreducible
// polynomial found by trial division.
#include <cstddef>
#include <vector>

#include "matrix_build.hpp"

namespace lowp::hadamard::detail {
namespace {

using Poly = std::vector<int>;  // coefficients, lowest degree first, each in [0, p)

void trim(Poly& a) {
  while (!a.empty() && a.back() == 0) a.pop_back();
}

int inverse_mod(int a, int p) {
  for (int x = 1; x < p; ++x)
    if (a * x % p == 1) return x;
  return 0;
}

// Remainder of a modulo b (b nonzero, p prime).
Poly poly_mod(Poly a, const Poly& b, int p) {
  trim(a);
  const int db = static_cast<int>(b.size()) - 1;
  const int lead_inv = inverse_mod(b.back(), p);
  while (static_cast<int>(a.size()) - 1 >= db) {
    const int shift = static_cast<int>(a.size()) - 1 - db;
    const int f = a.back() * lead_inv % p;
    for (int i = 0; i <= db; ++i) a[shift + i] = ((a[shift + i] - f * b[i]) % p + p) % p;
    trim(a);
  }
  return a;
}

// The monic polynomial of degree d whose lower coefficients are the base-p digits of code.
Poly monic_from_code(int code, int d, int p) {
  Poly f(d + 1, 0);
  for (int i = 0; i < d; ++i, code /= p) f[i] = code % p;
  f[d] = 1;
  return f;
}

int ipow(int b, int e) {
  int r = 1;
  while (e-- > 0) r *= b;
  return r;
}

// f (monic, degree k) is irreducible iff no monic polynomial of degree 1..k/2 divides it.
bool irreducible(const Poly& f, int p) {
  const int k = static_cast<int>(f.size()) - 1;
  for (int d = 1; 2 * d <= k; ++d)
    for (int code = 0; code < ipow(p, d); ++code)
      if (poly_mod(f, monic_from_code(code, d, p), p).empty()) return false;
  return true;
}

}  // namespace

PrimePower prime_power(int q) {
  if (q < 2) return {};
  int p = 2;
  while (p * p <= q && q % p != 0) ++p;
  if (q % p != 0) p = q;  // q itself is prime
  int k = 0, r = q;
  while (r % p == 0) {
    r /= p;
    ++k;
  }
  return r == 1 ? PrimePower{p, k} : PrimePower{};
}

GaloisField::GaloisField(int q) : q_(q) {
  const PrimePower pk = prime_power(q);
  p_ = pk.p;
  k_ = pk.k;
  // The first monic irreducible polynomial of degree k in base-p order of its coefficients.
  for (int code = 0; code < q; ++code) {
    const Poly f = monic_from_code(code, k_, p_);
    if (irreducible(f, p_)) {
      modulus_.assign(f.begin(), f.end() - 1);
      break;
    }
  }
}

int GaloisField::sub(int a, int b) const {
  int r = 0, w = 1;
  for (int i = 0; i < k_; ++i, a /= p_, b /= p_, w *= p_) r += ((a % p_ - b % p_ + p_) % p_) * w;
  return r;
}

int GaloisField::mul(int a, int b) const {
  std::vector<int> da(k_), db(k_), prod(2 * k_, 0);
  for (int i = 0; i < k_; ++i, a /= p_, b /= p_) {
    da[i] = a % p_;
    db[i] = b % p_;
  }
  for (int i = 0; i < k_; ++i)
    for (int j = 0; j < k_; ++j) prod[i + j] = (prod[i + j] + da[i] * db[j]) % p_;
  // Reduce with x^k = -(c_0 + c_1 x + ... + c_{k-1} x^{k-1}), from the top degree down.
  for (int d = 2 * k_ - 1; d >= k_; --d) {
    const int c = prod[d];
    if (c == 0) continue;
    prod[d] = 0;
    for (int i = 0; i < k_; ++i)
      prod[d - k_ + i] = ((prod[d - k_ + i] - c * modulus_[i]) % p_ + p_) % p_;
  }
  int r = 0;
  for (int i = k_ - 1; i >= 0; --i) r = r * p_ + prod[i];
  return r;
}

std::vector<std::int8_t> GaloisField::quadratic_character() const {
  std::vector<std::int8_t> chi(static_cast<std::size_t>(q_), -1);
  chi[0] = 0;
  for (int x = 1; x < q_; ++x) chi[static_cast<std::size_t>(mul(x, x))] = 1;
  return chi;
}

}  // namespace lowp::hadamard::detail
