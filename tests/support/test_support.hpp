// Small helpers shared by the test binaries.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::test {

inline const float kNaN = std::numeric_limits<float>::quiet_NaN();
inline const float kInf = std::numeric_limits<float>::infinity();

// The same bits, or both NaN (whose payload and sign the operations need not keep).
inline bool same_or_both_nan(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// The scalar kernels, then each SIMD instruction set this CPU runs.
inline std::vector<Isa> available_isas() {
  std::vector<Isa> v{Isa::scalar};
  for (Isa i : {Isa::avx2, Isa::avx512})
    if (isa_available(i)) v.push_back(i);
  return v;
}

// Expects f() to throw lowp::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const lowp::Error& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

// Small fast generator for test inputs (splitmix64).
struct SplitMix {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

// n independent N(0, 1) float32 values from mt19937 seeded with `seed`.
inline std::vector<float> normal_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = d(gen);
  return v;
}

}  // namespace lowp::test
