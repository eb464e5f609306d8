// Which construction builds H_m, the thread-safe cache of built matrices, and the list of
// orders the Kronecker transform uses.
#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "lowp/hadamard/matrix.hpp"
#include "lowp/numerics/error.hpp"
#include "matrix_build.hpp"

namespace lowp::hadamard {
namespace {

enum class Kind { sylvester, paley1, paley2, goethals_seidel, kronecker };

struct Plan {
  Kind kind;
  int a = 0, b = 0;  // paley: q; Goethals-Seidel: v; Kronecker: the two factor orders
};

// The construction chosen for m (no matrix is built): direct constructions first, else
// H_2 (x) H_{m/2}. (Up to kMaxExplicitOrder no order needs any other Kronecker product.)
std::optional<Plan> plan(int m) {
  if (m < 1 || m > kMaxExplicitOrder) return std::nullopt;
  if (std::has_single_bit(static_cast<unsigned>(m))) return Plan{Kind::sylvester};
  if (m % 4 != 0) return std::nullopt;
  if (const detail::PrimePower pp = detail::prime_power(m - 1); pp.p != 0 && (m - 1) % 4 == 3)
    return Plan{Kind::paley1, m - 1};
  if (const detail::PrimePower pp = detail::prime_power(m / 2 - 1);
      pp.p != 0 && (m / 2 - 1) % 4 == 1)
    return Plan{Kind::paley2, m / 2 - 1};
  if (!detail::stored_sequences(m / 4)[0].empty()) return Plan{Kind::goethals_seidel, m / 4};
  if (plan(m / 2)) return Plan{Kind::kronecker, 2, m / 2};
  return std::nullopt;
}

[[noreturn]] void unsupported(const char* fn, int m) {
  if (m < 1 || m > kMaxExplicitOrder)
    throw Error(std::string(fn) + ": order m = " + std::to_string(m) + " is outside [1, " +
                std::to_string(kMaxExplicitOrder) + "]");
  if (m > 2 && m % 4 != 0)
    throw Error(std::string(fn) + ": no Hadamard matrix of order m = " + std::to_string(m) +
                " exists (orders above 2 are multiples of 4)");
  throw Error(std::string(fn) +
              ": lowp has no construction for a Hadamard matrix of order m = " + std::to_string(m));
}

detail::Matrix build(int m, const Plan& p) {
  switch (p.kind) {
    case Kind::sylvester:
      return detail::sylvester(m);
    case Kind::paley1:
      return detail::paley1(p.a);
    case Kind::paley2:
      return detail::paley2(p.a);
    case Kind::goethals_seidel:
      return detail::goethals_seidel(detail::stored_sequences(p.a));
    case Kind::kronecker:
      return detail::kronecker(build(p.a, *plan(p.a)), p.a, build(p.b, *plan(p.b)), p.b);
  }
  return {};
}

std::string describe(const Plan& p) {
  auto field = [](int q) {
    const detail::PrimePower pp = detail::prime_power(q);
    return pp.k == 1 ? "GF(" + std::to_string(q) + ")"
                     : "GF(" + std::to_string(pp.p) + "^" + std::to_string(pp.k) + ")";
  };
  switch (p.kind) {
    case Kind::sylvester:
      return "Sylvester";
    case Kind::paley1:
      return "Paley I over " + field(p.a);
    case Kind::paley2:
      return "Paley II over " + field(p.a);
    case Kind::goethals_seidel:
      return "Goethals-Seidel array of four circulants of order " + std::to_string(p.a);
    case Kind::kronecker:
      return "H_" + std::to_string(p.a) + " (x) H_" + std::to_string(p.b);
  }
  return {};
}

}  // namespace

bool has_hadamard_matrix(int m) { return plan(m).has_value(); }

std::span<const std::int8_t> hadamard_matrix(int m) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<const detail::Matrix>> cache;
  const std::optional<Plan> p = plan(m);
  if (!p) unsupported("hadamard_matrix", m);
  std::lock_guard lock(mu);
  auto& slot = cache[m];
  if (!slot) slot = std::make_unique<const detail::Matrix>(build(m, *p));
  return {slot->data(), slot->size()};
}

std::string hadamard_construction(int m) {
  const std::optional<Plan> p = plan(m);
  if (!p) unsupported("hadamard_construction", m);
  return describe(*p);
}

std::span<const int> supported_orders() {
  static const std::vector<int> orders = [] {
    std::vector<int> o{12, 20, 28, 36, 40, 44, 52, 60, 76, 108, 140, 156, 172};
    for (int odd = 3; 4 * odd <= kMaxKroneckerOrder; odd += 2)
      for (int m = 4 * odd; m <= kMaxKroneckerOrder; m *= 2)
        if (has_hadamard_matrix(m)) {
          o.push_back(m);
          break;
        }
    std::sort(o.begin(), o.end());
    o.erase(std::unique(o.begin(), o.end()), o.end());
    return o;
  }();
  return orders;
}

}  // namespace lowp::hadamard
