// Goethals-Seidel construction for orders 4v without a Paley construction (156 = 4*39,
// 172 = 4*43), its stored sequences, and the search that found them.
//
// Four +-1 sequences a_1..a_4 of length v whose periodic autocorrelations
// P_a(s) = sum_i a_i a_{(i+s) mod v} sum to zero for every shift s != 0 (equivalently, the sets
// of -1 positions are 4-{v; k_1..k_4; sum k_i - v} supplementary difference sets) make
// circulants A, B, C, D with A A^T + B B^T + C C^T + D D^T = 4v I, and the Goethals-Seidel
// array (Goethals & Seidel 1970) turns them into a Hadamard matrix of order 4v.
//
// The search (after Djokovic's use of multiplier subgroups) only looks at sequences constant on
// the orbits of a subgroup <h> of the units of Z_v; their autocorrelations and power spectra
// are constant on orbits too, so there are few of them and each is described by a short
// vector. Because sum_i |DFT(a_i)(k)|^2 = 4v at every frequency k, a sequence with any power
// spectral density value above 4v cannot take part (the PSD filter), and the squared sums
// must add up to 4v. A meet-in-the-middle match of pair autocorrelation sums then finds
// quadruples.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <numeric>
#include <string>
#include <string_view>

#include "lowp/hadamard/matrix.hpp"
#include "lowp/numerics/error.hpp"
#include "matrix_build.hpp"

namespace lowp::hadamard {
namespace detail {
namespace {

// Found by find_supplementary_difference_sets(39, 16) and (43, 6) ('+' = +1, '-' = -1);
// test_matrix.cpp reruns the search and checks it still yields exactly these.
struct StoredSequences {
  int v;
  std::string_view rows[4];
};
constexpr StoredSequences kStored[] = {
    {39,
     {"--++-+-+++-+-+-----+++--+-+++--++++--+-", "---++-++-++---++-++--+-+++-+-+---+++-++",
      "-------++--++-+--+-+++-++-+-++++-++++++", "---++---+++++-+--+-+++-+++++++++-+-++-+"}},
    {43,
     {"++----+--+++-+--++-+-+-+-++++----+-++-+++--", "+++-+-+---+-++-+++---+--++++-+---+-++-+-+--",
      "+---------+--++-++-+++---++++--+++++--++++-",
      "++----+--+++-++-++-+++-+-++++--++++++-++++-"}},
};

using IntMatrix = std::vector<int>;  // v x v, row-major

IntMatrix circulant(const std::vector<std::int8_t>& a) {
  const int v = static_cast<int>(a.size());
  IntMatrix c(static_cast<std::size_t>(v) * v);
  for (int i = 0; i < v; ++i)
    for (int j = 0; j < v; ++j)
      c[static_cast<std::size_t>(i) * v + j] = a[static_cast<std::size_t>(((j - i) % v + v) % v)];
  return c;
}

}  // namespace

// [  A     BR     CR     DR  ]
// [ -BR    A     D^TR  -C^TR ]
// [ -CR  -D^TR    A     B^TR ]
// [ -DR   C^TR  -B^TR    A   ]   with R the back-diagonal permutation (R[i][j] = [i+j = v-1]).
Matrix goethals_seidel(const std::array<std::vector<std::int8_t>, 4>& rows) {
  const int v = static_cast<int>(rows[0].size()), m = 4 * v;
  const IntMatrix x[4] = {circulant(rows[0]), circulant(rows[1]), circulant(rows[2]),
                          circulant(rows[3])};
  // Block (bi, bj): sign, which circulant (0..3 = A..D), transposed, times R.
  struct Block {
    int sign, which;
    bool transposed, times_r;
  };
  static constexpr Block kArray[4][4] = {
      {{1, 0, false, false}, {1, 1, false, true}, {1, 2, false, true}, {1, 3, false, true}},
      {{-1, 1, false, true}, {1, 0, false, false}, {1, 3, true, true}, {-1, 2, true, true}},
      {{-1, 2, false, true}, {-1, 3, true, true}, {1, 0, false, false}, {1, 1, true, true}},
      {{-1, 3, false, true}, {1, 2, true, true}, {-1, 1, true, true}, {1, 0, false, false}}};
  Matrix h(static_cast<std::size_t>(m) * m);
  for (int bi = 0; bi < 4; ++bi)
    for (int bj = 0; bj < 4; ++bj) {
      const Block& b = kArray[bi][bj];
      for (int i = 0; i < v; ++i)
        for (int j = 0; j < v; ++j) {
          const int col = b.times_r ? v - 1 - j : j;  // (X R)[i][j] = X[i][v-1-j]
          const int r = b.transposed ? col : i, c = b.transposed ? i : col;
          h[static_cast<std::size_t>(bi * v + i) * m + (bj * v + j)] =
              static_cast<std::int8_t>(b.sign * x[b.which][static_cast<std::size_t>(r) * v + c]);
        }
    }
  return h;
}

std::array<std::vector<std::int8_t>, 4> stored_sequences(int v) {
  std::array<std::vector<std::int8_t>, 4> out;
  for (const StoredSequences& s : kStored)
    if (s.v == v)
      for (int r = 0; r < 4; ++r)
        for (char ch : s.rows[r]) out[r].push_back(ch == '-' ? -1 : 1);
  return out;
}

}  // namespace detail

namespace {

struct Candidate {
  std::uint32_t mask;       // which orbits hold -1
  std::vector<int> paf;     // periodic autocorrelation at each shift orbit representative
  std::vector<double> psd;  // power spectral density at each frequency orbit representative
};

struct PairKey {
  std::uint64_t hash;
  std::uint32_t i, j;
  bool operator<(const PairKey& o) const {
    return hash != o.hash ? hash < o.hash : (i != o.i ? i < o.i : j < o.j);
  }
};

std::uint64_t hash_vector(const std::vector<int>& v) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int x : v) {
    h ^= static_cast<std::uint64_t>(static_cast<std::uint32_t>(x)) + 0x9e3779b97f4a7c15ULL +
         (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ULL;
  }
  return h;
}

}  // namespace

std::array<std::vector<std::int8_t>, 4> find_supplementary_difference_sets(int v, int multiplier) {
  if (v < 3 || v > 63 || v % 2 == 0)
    throw Error("find_supplementary_difference_sets: v = " + std::to_string(v) +
                " is not an odd length in [3, 63]");
  const int h = ((multiplier % v) + v) % v;
  if (std::gcd(h, v) != 1)
    throw Error("find_supplementary_difference_sets: multiplier " + std::to_string(multiplier) +
                " is not a unit modulo v = " + std::to_string(v));
  // Orbits of x -> h x on Z_v.
  std::vector<int> orbit_of(static_cast<std::size_t>(v), -1), reps;
  for (int i = 0; i < v; ++i) {
    if (orbit_of[static_cast<std::size_t>(i)] >= 0) continue;
    const int id = static_cast<int>(reps.size());
    reps.push_back(i);
    for (int x = i; orbit_of[static_cast<std::size_t>(x)] < 0; x = x * h % v)
      orbit_of[static_cast<std::size_t>(x)] = id;
  }
  const int orbits = static_cast<int>(reps.size());
  if (orbits > 24)
    throw Error("find_supplementary_difference_sets: multiplier " + std::to_string(multiplier) +
                " leaves " + std::to_string(orbits) + " orbits modulo " + std::to_string(v) +
                " (at most 24 searchable)");
  const std::vector<int> shifts(reps.begin() + 1, reps.end());  // reps[0] = 0
  const double bound = 4.0 * v + 1e-6;

  // Candidates with a positive sum (negating a sequence keeps its autocorrelation), bucketed
  // by that sum.
  std::vector<Candidate> cands;
  std::vector<std::vector<std::uint32_t>> by_sum(static_cast<std::size_t>(v) + 1);
  std::vector<int> a(static_cast<std::size_t>(v));
  for (std::uint32_t mask = 0; mask < (std::uint32_t{1} << orbits); ++mask) {
    int sum = 0;
    for (int i = 0; i < v; ++i) {
      a[static_cast<std::size_t>(i)] = (mask >> orbit_of[static_cast<std::size_t>(i)] & 1) ? -1 : 1;
      sum += a[static_cast<std::size_t>(i)];
    }
    if (sum < 0 || sum * sum > 4 * v) continue;
    Candidate c{mask, {}, {}};
    bool ok = true;
    for (int k : shifts) {
      double re = 0, im = 0;
      for (int j = 0; j < v; ++j) {
        const double t = 2 * std::numbers::pi * ((j * k) % v) / v;
        re += a[static_cast<std::size_t>(j)] * std::cos(t);
        im += a[static_cast<std::size_t>(j)] * std::sin(t);
      }
      c.psd.push_back(re * re + im * im);
      if (c.psd.back() > bound) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    for (int s : shifts) {
      int p = 0;
      for (int j = 0; j < v; ++j)
        p += a[static_cast<std::size_t>(j)] * a[static_cast<std::size_t>((j + s) % v)];
      c.paf.push_back(p);
    }
    by_sum[static_cast<std::size_t>(sum)].push_back(static_cast<std::uint32_t>(cands.size()));
    cands.push_back(std::move(c));
  }

  auto psd_fits = [&](std::uint32_t i, std::uint32_t j) {
    for (std::size_t t = 0; t < shifts.size(); ++t)
      if (cands[i].psd[t] + cands[j].psd[t] > bound) return false;
    return true;
  };
  auto pair_paf = [&](std::uint32_t i, std::uint32_t j, int sign) {
    std::vector<int> s(shifts.size());
    for (std::size_t t = 0; t < shifts.size(); ++t)
      s[t] = sign * (cands[i].paf[t] + cands[j].paf[t]);
    return s;
  };
  auto sequence = [&](std::uint32_t c) {
    std::vector<std::int8_t> seq(static_cast<std::size_t>(v));
    for (int i = 0; i < v; ++i)
      seq[static_cast<std::size_t>(i)] =
          (cands[c].mask >> orbit_of[static_cast<std::size_t>(i)] & 1) ? -1 : 1;
    return seq;
  };
  // Visits the pairs (i, j) with sums (s, t), i < j when s == t, that pass the PSD filter.
  auto for_pairs = [&](int s, int t, auto&& f) {
    for (std::uint32_t i : by_sum[static_cast<std::size_t>(s)])
      for (std::uint32_t j : by_sum[static_cast<std::size_t>(t)])
        if ((s != t || i <= j) && psd_fits(i, j) && f(i, j)) return true;
    return false;
  };

  // Row sums s1 <= s2 <= s3 <= s4 (odd, as v is odd) with squares adding up to 4v.
  for (int s1 = 1; 4 * s1 * s1 <= 4 * v; s1 += 2)
    for (int s2 = s1; s1 * s1 + 3 * s2 * s2 <= 4 * v; s2 += 2)
      for (int s3 = s2; s1 * s1 + s2 * s2 + 2 * s3 * s3 <= 4 * v; s3 += 2) {
        const int rest = 4 * v - s1 * s1 - s2 * s2 - s3 * s3;
        const int s4 = static_cast<int>(std::lround(std::sqrt(rest)));
        if (s4 < s3 || s4 * s4 != rest || s4 % 2 == 0) continue;
        std::vector<PairKey> left;
        for_pairs(s1, s2, [&](std::uint32_t i, std::uint32_t j) {
          left.push_back({hash_vector(pair_paf(i, j, 1)), i, j});
          return false;
        });
        std::sort(left.begin(), left.end());
        std::array<std::vector<std::int8_t>, 4> found;
        for_pairs(s3, s4, [&](std::uint32_t k, std::uint32_t l) {
          const std::vector<int> want = pair_paf(k, l, -1);
          const std::uint64_t hw = hash_vector(want);
          for (auto it = std::lower_bound(left.begin(), left.end(), PairKey{hw, 0, 0});
               it != left.end() && it->hash == hw; ++it)
            if (pair_paf(it->i, it->j, 1) == want) {
              found = {sequence(it->i), sequence(it->j), sequence(k), sequence(l)};
              return true;
            }
          return false;
        });
        if (!found[0].empty()) return found;
      }
  return {};
}

}  // namespace lowp::hadamard
