// Inputs for the oracle comparison of the codec: the boundary points of a format (every
// representable value, every midpoint, their float and double ulp neighbours, overflow and
// underflow) and random inputs concentrated on the format's range.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "reference.hpp"

namespace lowp::test {

// Counts checks and failures and keeps the first few failure messages.
struct Failures {
  std::size_t count = 0, checks = 0;
  std::string first;
  void fail(const std::string& msg) {
    if (count++ < 8) first += msg + "\n";
  }
  void add(const std::string& msg) {  // one check: "" when it passed
    ++checks;
    if (!msg.empty()) fail(msg);
  }
  void report(const std::string& what) const {
    EXPECT_EQ(count, 0u) << what << ": " << count << " of " << checks << " checks failed, first:\n" << first;
  }
};

// Every mode, saturating or not, flushing or not; stochastic also at the exact threshold
// (rand = 2^32 - floor(f * 2^32) rounds up, one less does not) and at `rand`.
template <class T>
void check_all_modes(const Format& f, const Spec& s, T x, Failures& out, std::uint32_t rand, bool thresholds) {
  const Prepared p = prepare(s, static_cast<double>(x));
  for (int opts = 0; opts < 4; ++opts) {
    CastOptions o;
    o.saturate = (opts & 1) != 0;
    o.flush_subnormals = (opts & 2) != 0;
    for (Round r : kAllModes) {
      o.round = r;
      if (r != Round::stochastic) {
        out.add(check_cast(f, s, p, x, o));
        continue;
      }
      out.add(check_cast(f, s, p, x, o, rand));
      if (thresholds) {
        const std::uint32_t t = static_cast<std::uint32_t>((std::uint64_t{1} << 32) - p.b.frac32);
        for (std::uint32_t u : {0u, 1u, 0x7fffffffu, 0x80000000u, 0xffffffffu, t, t - 1})
          out.add(check_cast(f, s, p, x, o, u));
      }
    }
  }
}

// Nonnegative boundary points as doubles (each exact); `stride` > 1 keeps one value in stride.
inline std::vector<double> boundary_points(const Format& f, const Spec& s, std::uint32_t stride = 1) {
  std::vector<Real> vals;  // representable magnitudes, increasing
  if (f.kind == Kind::integer) {
    const int top = std::max(-f.int_min, f.int_max);
    for (int k = 0; k <= top; ++k) vals.emplace_back(k);
  } else {
    const std::uint32_t all = (1u << (f.exp_bits + f.man_bits)) - 1;
    for (std::uint32_t mag = 0; mag <= all; ++mag) {
      const CodeMeaning c = spec_decode(f, mag);
      if (!c.nan && !c.inf) vals.push_back(c.magnitude);
    }
  }
  // The value after max in the unbounded system: where overflow starts.
  vals.push_back(oracle::bracket(s.system, s.max * (1 + ldexp(Real(1), -100))).hi);
  std::vector<Real> pts = {Real(0), s.min_positive / 2, s.min_positive / 4, s.min_positive * 3 / 4,
                           s.max * 2, s.max * 4, ldexp(s.max, 20)};
  for (std::size_t i = 0; i < vals.size(); ++i) {
    if (stride > 1 && i % stride != 0 && i + 3 < vals.size() && i > 3) continue;
    pts.push_back(vals[i]);
    if (i + 1 < vals.size()) pts.push_back((vals[i] + vals[i + 1]) / 2);
  }
  std::vector<double> out;
  auto add = [&](double d) {
    if (!std::isnan(d) && d >= 0) out.push_back(d);
  };
  for (const Real& p : pts) {
    const double d = p.convert_to<double>();
    if (Real(d) != p) continue;  // beyond double: covered by the extremes below
    add(d);
    double lo = d, hi = d;
    for (int k = 0; k < 2; ++k) {
      lo = std::nextafter(lo, 0.0), hi = std::nextafter(hi, 1e300);
      add(lo), add(hi);
    }
    const float fl = static_cast<float>(d);
    if (static_cast<double>(fl) == d) {  // float ulp neighbours, as exact doubles
      float flo = fl, fhi = fl;
      for (int k = 0; k < 2; ++k) {
        flo = std::nextafter(flo, 0.0f), fhi = std::nextafter(fhi, 1e30f);
        add(flo), add(fhi);
      }
    }
  }
  for (double d : {double(std::numeric_limits<float>::max()), std::numeric_limits<double>::max(),
                   double(std::numeric_limits<float>::denorm_min()), std::numeric_limits<double>::denorm_min(),
                   double(std::numeric_limits<float>::min()), std::numeric_limits<double>::min(),
                   std::numeric_limits<double>::infinity()})
    add(d);
  return out;
}

// Checks every boundary point of f, both signs, from float (when exact) and from double.
inline void check_boundaries(const Format& f, std::uint32_t stride = 1) {
  const Spec s = make_spec(f);
  Failures fails;
  SplitMix rng{0x5eed};
  for (double d : boundary_points(f, s, stride)) {
    for (double x : {d, -d}) {
      const auto rand = static_cast<std::uint32_t>(rng.next());
      check_all_modes(f, s, x, fails, rand, true);
      const float fx = static_cast<float>(x);
      if (static_cast<double>(fx) == x || std::isinf(x)) check_all_modes(f, s, fx, fails, rand, true);
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  check_all_modes(f, s, nan, fails, 0, false);
  check_all_modes(f, s, -nan, fails, 0, false);
  check_all_modes(f, s, static_cast<float>(nan), fails, 0, false);
  check_all_modes(f, s, -static_cast<float>(nan), fails, 0, false);
  fails.report(format_name(f) + " boundaries");
}

// Random input: mostly sign * (1 + random mantissa) * 2^e with e uniform over
// [log2(min_positive) - 2, log2(max) + 2] (clipped to the type), one in eight a raw bit pattern.
template <class T>
T random_input(SplitMix& rng, int elo, int ehi) {
  const std::uint64_t r = rng.next();
  // Exponent uniform in [elo, ehi] clipped to the type's finite range (subnormals included).
  auto exponent = [&](int lo, int hi) {
    lo = std::max(elo, lo), hi = std::min(ehi, hi);
    return lo + static_cast<int>((r >> 8) % static_cast<std::uint64_t>(hi - lo + 1));
  };
  if constexpr (sizeof(T) == 4) {
    if (r % 8 == 0) return std::bit_cast<float>(static_cast<std::uint32_t>(r >> 32));
    const int e = exponent(-149, 127);
    const float m = 1.0f + std::ldexp(static_cast<float>(r >> 41), -23);
    const float v = std::ldexp(m, e);
    return (r & 2) ? -v : v;
  } else {
    if (r % 8 == 0) return std::bit_cast<double>(rng.next());
    const int e = exponent(-1074, 1023);
    const double m = 1.0 + std::ldexp(static_cast<double>(rng.next() >> 12), -52);
    const double v = std::ldexp(m, e);
    return (r & 2) ? -v : v;
  }
}

// n random float and n random double inputs, each in every mode and option.
inline void check_random(const Format& f, std::size_t n, std::uint64_t seed) {
  const Spec s = make_spec(f);
  int elo = 0, ehi = 0;
  frexp(s.min_positive, &elo);
  frexp(s.max, &ehi);
  elo -= 3, ehi += 1;  // [min_positive / 4, 4 * max)
  Failures fails;
  SplitMix rng{seed};
  for (std::size_t i = 0; i < n; ++i) {
    const auto rand = static_cast<std::uint32_t>(rng.next());
    check_all_modes(f, s, random_input<float>(rng, elo, ehi), fails, rand, false);
    check_all_modes(f, s, random_input<double>(rng, elo, ehi), fails, rand, false);
  }
  fails.report(format_name(f) + " random");
}

}  // namespace lowp::test
